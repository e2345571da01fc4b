#!/usr/bin/env python3
"""A delaying TCP relay: extra delay on the links of one network-namespace host, where the kernel has no sch_netem.

Run inside a host's namespace together with an iptables rule that sends the host's own outgoing TCP connections to it:

    iptables -t nat -A OUTPUT -p tcp -d SUBNET ! --dport 22 -m mark ! --mark MARK -j REDIRECT --to-ports PORT
    delay-relay.py --port PORT --delay-ms 20 --mark MARK --lifetime 600 --stats FILE

Each redirected connection is accepted here, its original destination read back (SO_ORIGINAL_DST), and a connection
opened to it (marked, so the rule lets it through). Bytes in both directions are held DELAY ms after they arrive, then
sent in order: the application sees each of those links DELAY ms longer one way. The relay's own sockets acknowledge
at once, so TCP's window does not see the delay (a delay seen by the program, not a long fat pipe). At most --buffer
bytes wait per direction (then reading pauses). Connections the host accepts are not delayed, nor is UDP (the liveness
watch's heartbeats). The relay ends by itself after --lifetime seconds; --stats gets
its running totals, "connections=N bytes=B", rewritten every second and whenever a connection opens or closes.
"""
import argparse
import collections
import socket
import struct
import sys
import threading
import time

SO_ORIGINAL_DST = 80


def original_destination(conn):
    raw = conn.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, packed = struct.unpack_from("!2xH4s", raw)
    return socket.inet_ntoa(packed), port


class Stats:
    def __init__(self, path):
        self.path, self.lock, self.connections, self.bytes = path, threading.Lock(), 0, 0

    def add(self, connections=0, nbytes=0):
        with self.lock:
            self.connections += connections
            self.bytes += nbytes

    def write(self):
        if not self.path:
            return
        with self.lock:
            line = "connections=%d bytes=%d\n" % (self.connections, self.bytes)
        with open(self.path, "w") as f:
            f.write(line)


def pump(src, dst, delay, limit, stats):
    """Reads src, holds each chunk `delay` seconds, writes it to dst in order; closes dst's sending side at EOF."""
    queue, cond, state = collections.deque(), threading.Condition(), {"held": 0, "eof": False}

    def writer():
        try:
            while True:
                with cond:
                    while not queue and not state["eof"]:
                        cond.wait()
                    if not queue:
                        break
                    due, chunk = queue[0]
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                dst.sendall(chunk)
                stats.add(nbytes=len(chunk))
                with cond:
                    queue.popleft()
                    state["held"] -= len(chunk)
                    cond.notify_all()
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RD)
                except OSError:
                    pass

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        while True:
            chunk = src.recv(65536)
            with cond:
                if not chunk:
                    state["eof"] = True
                    cond.notify_all()
                    break
                while state["held"] >= limit:
                    cond.wait()
                queue.append((time.monotonic() + delay, chunk))
                state["held"] += len(chunk)
                cond.notify_all()
    except OSError:
        with cond:
            state["eof"] = True
            cond.notify_all()
    t.join()


def serve(conn, delay, mark, limit, stats):
    try:
        host, port = original_destination(conn)
        out = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        out.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, mark)
        out.settimeout(10)
        out.connect((host, port))
        out.settimeout(None)
        for s in (conn, out):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError as e:
        print("delay-relay: %s" % e, file=sys.stderr)
        conn.close()
        return
    stats.add(connections=1)
    stats.write()
    back = threading.Thread(target=pump, args=(out, conn, delay, limit, stats), daemon=True)
    back.start()
    pump(conn, out, delay, limit, stats)
    back.join()
    conn.close()
    out.close()
    stats.write()


def main():
    p = argparse.ArgumentParser(description="delaying TCP relay for iptables REDIRECT (see the module docstring)")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--delay-ms", type=float, required=True)
    p.add_argument("--mark", type=int, required=True, help="SO_MARK of the relay's own connections (the rule skips it)")
    p.add_argument("--lifetime", type=float, required=True, help="seconds; the relay ends by itself after that")
    p.add_argument("--buffer", type=int, default=16 << 20, help="bytes held at most per direction")
    p.add_argument("--stats", help="file that gets the running totals")
    a = p.parse_args()
    if not (0 <= a.delay_ms <= 10_000) or not (0 < a.lifetime <= 86_400) or a.buffer < 65536:
        p.error("--delay-ms 0..10000, --lifetime 0..86400 s, --buffer at least 65536")
    stats = Stats(a.stats)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", a.port))
    listener.listen(128)
    listener.settimeout(1.0)
    end = time.monotonic() + a.lifetime
    stats.write()
    print("delay-relay: port %d, %.1f ms each way, mark %d, for %.0f s" % (a.port, a.delay_ms, a.mark, a.lifetime), flush=True)
    while time.monotonic() < end:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            stats.write()
            continue
        threading.Thread(target=serve, args=(conn, a.delay_ms / 1000.0, a.mark, a.buffer, stats), daemon=True).start()
        stats.write()
    stats.write()


if __name__ == "__main__":
    main()
