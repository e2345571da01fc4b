#!/usr/bin/env bash
# What the delaying relay (bench/lib/delay-relay) adds to a TCP round trip: a ping-pong of 8-byte messages between two
# sockets in a network namespace of its own, without the relay and then through it at each delay given.
#   bench/lib/delay-relay-check.sh [ROUNDS] [DELAY_MS ...]    (root; default 2000 round trips at 0 0.05 0.1 1 ms)
# Prints the median and the 10th and 90th percentiles of each. The namespace (with its processes) is removed at the end;
# traffic stays on the namespace's own loopback (10.250.0.2/32 on its lo).
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "delay-relay-check: needs root (a network namespace and iptables)" >&2; exit 1; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ROUNDS=${1:-2000}
[[ $ROUNDS =~ ^[1-9][0-9]{0,5}$ ]] || { echo "delay-relay-check: ROUNDS is 1..999999, got '$ROUNDS'" >&2; exit 2; }
shift || true
DELAYS=("$@")
[ ${#DELAYS[@]} -gt 0 ] || DELAYS=(0 0.05 0.1 1)
"$ROOT/bench/lib/delay-relay" --help >/dev/null
NS=jdist-relay-check-$$
WORK=$(mktemp -d)
ip netns add "$NS"
cleanup() {
  local p
  for p in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
X=(ip netns exec "$NS")
"${X[@]}" ip link set lo up
"${X[@]}" ip addr add 10.250.0.2/32 dev lo
cat >"$WORK/pingpong.py" <<'PY'
import socket, sys, time
if sys.argv[1] == "server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("10.250.0.2", 9000)); s.listen(1)
    s.settimeout(30); c, _ = s.accept(); c.settimeout(60); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        d = c.recv(64)
        if not d: break
        c.sendall(d)
else:
    n = int(sys.argv[2])
    c = socket.create_connection(("10.250.0.2", 9000), timeout=10); c.settimeout(60)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t = []
    for _ in range(n):
        start = time.perf_counter(); c.sendall(b"x" * 8); got = 0
        while got < 8: got += len(c.recv(64))
        t.append((time.perf_counter() - start) * 1e6)
    t.sort()
    print("median %.1f us, p10 %.1f, p90 %.1f (%d round trips)" % (t[n // 2], t[n // 10], t[9 * n // 10], n))
PY
for d in none "${DELAYS[@]}"; do
  "${X[@]}" iptables -t nat -F OUTPUT
  relay=
  if [ "$d" != none ]; then
    "${X[@]}" iptables -t nat -A OUTPUT -p tcp -d 10.250.0.2 -m mark ! --mark 7 -j REDIRECT --to-ports 7777
    "${X[@]}" "$ROOT/bench/lib/delay-relay" --port 7777 --delay-ms "$d" --mark 7 --lifetime 300 >/dev/null &
    relay=$!
    sleep 0.3
  fi
  "${X[@]}" timeout 120 python3 "$WORK/pingpong.py" server &
  server=$!
  sleep 0.3
  printf '%-14s ' "$([ "$d" = none ] && echo "no relay:" || echo "relay $d ms:")"
  "${X[@]}" timeout 120 python3 "$WORK/pingpong.py" client "$ROUNDS"
  wait "$server" || true
  if [ -n "$relay" ]; then kill "$relay" 2>/dev/null || true; wait "$relay" 2>/dev/null || true; fi
done
