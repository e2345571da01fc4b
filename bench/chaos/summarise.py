#!/usr/bin/env python3
"""Summary of a chaos-suite results folder (bench/chaos/run.sh): per backend and fault, the trials, how many ended
with the right typed error on every survivor, hangs, leftover processes, and the detection time (fault -> every
survivor exited) as median / p90 / max; then the degraded links: completed runs and the slowdown against clean.

    python3 bench/chaos/summarise.py RESULTS_DIR
"""
import csv
import os
import statistics
import sys
from collections import Counter, OrderedDict


def pct(values, q):
    """Nearest-rank percentile of a sorted list."""
    if not values:
        return None
    k = max(0, min(len(values) - 1, -(-q * len(values) // 100) - 1))
    return values[int(k)]


def sec(ms):
    return "-" if ms is None else f"{ms / 1000:.2f}"


def read(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


TYPED = ("PeerLostException", "PeerUnresponsiveException")


def outcome(r):
    """ok, hang, no-fault, or for a wrong-error trial whether the type was right and only the named rank differed."""
    if r["outcome"] == "other-rank-named":
        return "right type, another rank named"
    if r["outcome"] != "wrong-error" or r["backend"] in ("mpi", "mpich", "nccl"):
        return r["outcome"]
    classes = [s.split(":")[1] for s in r["survivors"].split(",") if s.count(":") >= 1]
    return "right type, another rank named" if classes and all(c in TYPED for c in classes) else "wrong error"


def after(rs):
    """The victim-after column: SIGCONT outcomes counted; for an MPI partition ("cut:NAMES,healed:Ns"), what was left
    on the cut-off host while the cut lasted and how long it took to go once the cut was lifted."""
    values = [r["victim_after"] for r in rs if r["victim_after"] != "-"]
    cut = [v for v in values if v.startswith("cut:")]
    if not cut:
        return ", ".join(f"{k} {v}" for k, v in Counter(values).items()) or "-"
    left = Counter(v.split(",")[0][len("cut:"):] for v in cut)
    healed = sorted(int(v.split("healed:")[1].rstrip("s")) for v in cut if "healed:" in v and not v.endswith("still"))
    still = sum(v.endswith("healed:still") for v in cut)
    text = "left on the cut-off host: " + ", ".join(f"{k} {n}" for k, n in left.items())
    if healed:
        text += f"; gone after the cut in {statistics.median(healed):g} s median, {healed[-1]} s max"
    if still:
        text += f"; still there 60 s after the cut: {still}"
    return text


def main(folder):
    rows = read(os.path.join(folder, "results.tsv"))
    groups = OrderedDict()
    for r in rows:
        groups.setdefault((r["backend"], r["fault"]), []).append(r)
    print("| backend | fault | trials | right error (ring: naming the faulty rank) | hangs | other outcomes | leftover processes | detection s: median | p90 | max | victim after SIGCONT, or the cut-off host (MPI) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (backend, fault), rs in groups.items():
        detect = sorted(int(r["detect_ms"]) for r in rs if r["detect_ms"] not in ("", "-"))
        outcomes = Counter(outcome(r) for r in rs)
        other = ", ".join(f"{k} {v}" for k, v in outcomes.items() if k not in ("ok", "hang")) or "0"
        left = sum(int(r["leftover"]) for r in rs)
        label = {"load": "kill, CPU load"}.get(fault, fault)
        print(f"| {backend} | {label} | {len(rs)} | {outcomes['ok']} | {outcomes['hang']} | {other} | {left} | "
              f"{sec(statistics.median(detect) if detect else None)} | {sec(pct(detect, 90))} | "
              f"{sec(detect[-1] if detect else None)} | {after(rs)} |")
    errors = Counter()
    for r in rows:
        for s in r["survivors"].split(","):
            if ":" in s:
                errors[(r["backend"], s.split(":", 1)[1].split(":")[0])] += 1
    if errors:
        print()
        print("survivors' errors: " + "; ".join(f"{b} {e} x{n}" for (b, e), n in sorted(errors.items())))
    deg = read(os.path.join(folder, "degraded.tsv"))
    if deg:
        print()
        print("| link (host 1 of 4 namespaces) | runs | completed, sums correct | slowest rank's loop s: median | slowdown vs clean |")
        print("|---|---|---|---|---|")
        by = OrderedDict()
        for r in deg:
            by.setdefault(r["link"], []).append(r)
        medians = {}
        for link, rs in by.items():
            loops = [int(r["loop_ms"]) for r in rs if r["outcome"] == "ok" and r["loop_ms"] not in ("", "-")]
            medians[link] = statistics.median(loops) if loops else None
        for link, rs in by.items():
            ok = sum(r["outcome"] == "ok" for r in rs)
            m, c = medians[link], medians.get("clean")
            slow = f"{m / c:.2f}x" if m and c else "-"
            print(f"| {link} | {len(rs)} | {ok} | {sec(m)} | {slow} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
