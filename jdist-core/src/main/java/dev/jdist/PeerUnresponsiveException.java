package dev.jdist;

import java.time.Duration;

/**
 * The job's liveness watch (docs/reliability.md) heard nothing from a peer for the heartbeat bound
 * ({@code JDIST_HEARTBEAT}): its process is gone, frozen (stopped, or starved of CPU) or cut off by the network. The
 * group is broken from then on, on every rank. Only between jdist ranks (never with MLX peers in the group).
 */
public class PeerUnresponsiveException extends PeerLostException {

    /** What is known about the silent peer's process. */
    public enum State {
        /** It runs on this host and has exited (or is a zombie). */
        EXITED("its process has exited"),
        /** It runs on this host and is stopped (SIGSTOP, a debugger, a suspended shell job). */
        STOPPED("its process is stopped (SIGSTOP or a debugger)"),
        /** It runs on this host and is running: starved of CPU, paused by a long garbage collection, or its datagrams are dropped. */
        RUNNING("its process is running but did not answer: starved of CPU, in a long GC pause, or its heartbeats are dropped"),
        /** It runs on another host: gone, frozen or unreachable, which this rank cannot tell apart. */
        UNKNOWN("it is gone, frozen or unreachable (it runs on another host, so this rank cannot tell which)");

        private final String meaning;

        State(String meaning) { this.meaning = meaning; }

        /** The state in words, for messages. */
        public String meaning() { return meaning; }
    }

    private final State state;
    private final Duration silence;
    private final int declaredBy;

    /**
     * @param rank       the rank raising the error
     * @param peer       the silent rank
     * @param host       where it ran ({@code node3 (pid 4711, 10.0.0.3)})
     * @param state      what is known about its process
     * @param silence    how long nothing was heard from it when it was declared lost
     * @param declaredBy the rank whose watch declared it (this rank, or one whose notice arrived first)
     */
    public PeerUnresponsiveException(String message, Throwable cause, int rank, int peer, String host, String operation,
                                     State state, Duration silence, int declaredBy) {
        super(message, cause, rank, peer, host, operation);
        this.state = state;
        this.silence = silence;
        this.declaredBy = declaredBy;
    }

    /** What is known about the silent peer's process. */
    public State state() { return state; }

    /** How long nothing had been heard from the peer when it was declared lost. */
    public Duration silence() { return silence; }

    /** The rank whose liveness watch declared the peer lost. */
    public int declaredBy() { return declaredBy; }
}
