/**
 * Direct connections between the members of a group whose members are all jdist, and the engine that runs operations
 * over them (docs/reference/collectives.md §10). The ring backend forms a {@link dev.jdist.mesh.PeerMesh} once every
 * member is known to be jdist ({@code RingGroup.peerMesh()}, {@code RingGroup.meshTransport()}); nothing here ever
 * touches the MLX-compatible ring sockets.
 *
 * <p>An operation is a {@link dev.jdist.algo.MeshSchedule} per rank, built by a pure function and run by
 * {@link dev.jdist.mesh.MeshTransport#run}, which connects to the peers the schedule names (on demand), moves each
 * step's messages concurrently, combines, and breaks the mesh on any failure. For example, a send to any rank and the
 * matching receive:
 *
 * <pre>{@code
 * MeshSchedule send = new MeshSchedule.Builder().send(dst, MeshSchedule.Buffer.WORK, 0, x.nbytes()).build();
 * transport.run("send to rank " + dst, send, x.segment(), null, null, null);        // on the sender
 * MeshSchedule recv = new MeshSchedule.Builder().recv(src, MeshSchedule.Buffer.WORK, 0, out.nbytes()).build();
 * transport.run("recv from rank " + src, recv, out.segment(), null, null, null);    // on the receiver
 * }</pre>
 *
 * A batch of sends and receives issued together is one step holding all of them (every message of a step progresses at
 * once, so no order of the batch can deadlock); a broadcast is a tree of steps; an all-to-all is one step of n-1 sends
 * and n-1 receives (a schedule that reads one buffer and writes another adds a {@code Buffer} constant and passes both
 * segments). Whatever is added must keep §10.3's rules, which the algorithms' tests check with an in-memory simulator
 * ({@code ScheduleSimulator} in the tests).
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.spi, dev.jdist.reduce, dev.jdist.algo, dev.jdist.shm, dev.jdist.connect.
 */
package dev.jdist.mesh;
