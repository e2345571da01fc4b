"""Report of a bench/cluster/run.sh sitting: calibration summary, side-by-side tables, plots.

    report.py calibration OUT_DIR     # OUT_DIR/calibration/summary.csv (+ the table on stdout)
    report.py pick-rates OUT_DIR      # "N RATE" lines: per host count, the highest calibrated rate that was link-bound
    report.py report OUT_DIR          # OUT_DIR/report.md, OUT_DIR/summary.csv, OUT_DIR/cluster-n<N>.png

Reads the raw outputs run.sh writes: calibration/n<N>-<rate>-pair<i>.json (iperf3 -J), calibration/rtt.csv,
n<N>/{jdist,ring,mpi,gloo}-*.csv (jdist bench --csv's columns; N is the host count, the rows' ranks column N × the ranks
per host), n<N>/rate (the tc rate), phases.csv, meta.txt.
"""
import argparse
import csv
import glob
import json
import os
import re
import statistics

# tbf counts each TCP segment as MSS 1448 + 66 bytes of headers (Ethernet 14, IPv4 20, TCP with timestamps 32):
# the most TCP payload a shaped link can carry.
TCP_PAYLOAD_SHARE = 1448 / 1514
IMPL_LABEL = {"jdist": "jdist", "ring": "jdist (flat ring)", "mpi": "Open MPI", "gloo": "Gloo"}
IMPL_ORDER = ["jdist", "ring", "mpi", "gloo"]


def rate_bps(rate):
    m = re.fullmatch(r"(\d+)(kbit|mbit|gbit)", rate)
    return int(m.group(1)) * {"kbit": 10**3, "mbit": 10**6, "gbit": 10**9}[m.group(2)] if m else None


def rate_label(bps):
    return f"{bps / 1e9:g} Gbit/s" if bps >= 1e9 else f"{bps / 1e6:g} Mbit/s"


def fmt_size(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def retransmitted(phase):
    """'R of S segments (P %)' for a phase row; '–' for results folders from before the harness counted them."""
    try:
        sent, again = int(phase["tcp_out_segs"]), int(phase["tcp_retrans_segs"])
    except (KeyError, TypeError, ValueError):
        return "–"
    return f"{again} of {sent} ({100 * again / sent:.2f} %)" if sent else "none sent"


def phases(out):
    path = os.path.join(out, "phases.csv")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------- calibration
def calibration(out):
    rows = []
    busy = {(p["n"], p["phase"]): p["cpu_busy_pct"] for p in phases(out)}
    groups = {}
    for path in glob.glob(os.path.join(out, "calibration", "n*-pair*.json")):
        m = re.fullmatch(r"n(\d+)-(.+)-pair(\d+)\.json", os.path.basename(path))
        n, rate = int(m.group(1)), m.group(2)
        streams = groups.setdefault((n, rate), [])
        try:
            with open(path) as f:
                end = json.load(f)["end"]
            streams.append(end["sum_received"]["bits_per_second"] / 1e6)
            streams.append(end["sum_received_bidir_reverse"]["bits_per_second"] / 1e6)
        except (ValueError, KeyError):
            streams.append(0.0)  # a pair that failed counts as nothing delivered
    for (n, rate), s in sorted(groups.items(), key=lambda kv: (kv[0][0], -(rate_bps(kv[0][1]) or 10**15))):
        bps = rate_bps(rate)
        ceiling = bps * TCP_PAYLOAD_SHARE / 1e6 if bps else None
        row = {"n": n, "rate": rate, "streams": len(s), "min_mbps": round(min(s)), "median_mbps": round(statistics.median(s)),
               "max_mbps": round(max(s)), "aggregate_gbps": round(sum(s) / 1000, 2),
               "tcp_ceiling_mbps": round(ceiling) if ceiling else "",
               "min_share_of_ceiling_pct": round(100 * min(s) / ceiling) if ceiling else "",
               "cpu_busy_pct": busy.get((str(n), f"calibrate-{rate}"), "")}
        if ceiling:
            row["bound_by"] = "link" if min(s) >= 0.9 * ceiling else "CPU (host)"
        else:
            row["bound_by"] = "CPU (host): unshaped capacity"
        rows.append(row)
    if rows:
        with open(os.path.join(out, "calibration", "summary.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
    return rows


def calibration_table(rows, out):
    lines = ["| hosts | rate | streams | per-stream Mbit/s min / median / max | aggregate Gbit/s | min as % of TCP ceiling | CPU busy | bound by |",
             "|---:|---|---:|---|---:|---:|---:|---|"]
    for r in rows:
        ceiling = f"{r['min_share_of_ceiling_pct']} % of {r['tcp_ceiling_mbps']}" if r["tcp_ceiling_mbps"] else "–"
        lines.append(f"| {r['n']} | {r['rate']} | {r['streams']} | {r['min_mbps']} / {r['median_mbps']} / {r['max_mbps']} | "
                     f"{r['aggregate_gbps']} | {ceiling} | {r['cpu_busy_pct']} % | {r['bound_by']} |")
    rtt = os.path.join(out, "calibration", "rtt.csv")
    if os.path.exists(rtt):
        with open(rtt) as f:
            for r in csv.DictReader(f):
                lines.append("")
                lines.append(f"ping host0 → host1 ({r['rate']}): round trip min / avg / max / mdev = {r['rtt_min_us']} / "
                             f"{r['rtt_avg_us']} / {r['rtt_max_us']} / {r['rtt_mdev_us']} µs")
    return "\n".join(lines)


# ---------------------------------------------------------------- benchmarks
def load_results(out):
    """Every row of every n<N>/<impl>-*.csv; a size seen twice (all_gather's smallest sizes round up to one element
    per rank) keeps its first row."""
    rows, seen = [], set()
    for path in sorted(glob.glob(os.path.join(out, "n*", "*.csv"))):
        impl = os.path.basename(path).split("-")[0]
        if impl not in IMPL_LABEL:
            continue
        hosts = int(os.path.basename(os.path.dirname(path))[1:])
        with open(path) as f:
            for r in csv.DictReader(line for line in f if line.strip()):
                try:
                    row = {"impl": impl, "op": r["op"], "mode": r["mode"], "n": hosts, "ranks": int(r["ranks"]),
                           "bytes": int(r["size_bytes"]),
                           "median_us": float(r["median_us"]), "p99_us": float(r["p99_us"]), "busbw": float(r["busbw_GBps"]),
                           "wrong": int(r["wrong"])}
                except (KeyError, ValueError, TypeError):
                    continue  # a truncated line of a run that was cut short
                key = (impl, row["op"], row["n"], row["bytes"])
                if key not in seen:
                    seen.add(key)
                    rows.append(row)
    return rows


def table(rows, n, op, link_gbs):
    impls = [i for i in IMPL_ORDER if any(r["impl"] == i and r["n"] == n and r["op"] == op for r in rows)]
    by = {(r["impl"], r["bytes"]): r for r in rows if r["n"] == n and r["op"] == op}
    sizes = sorted({b for (_, b) in by})
    head = "| size | " + " | ".join(f"{IMPL_LABEL[i]} median µs" for i in impls) + " | " + \
           " | ".join(f"{IMPL_LABEL[i]} busbw GB/s (of link)" for i in impls) + " |"
    lines = [head, "|---:|" + "---:|" * (2 * len(impls))]
    for b in sizes:
        cells = []
        for i in impls:
            r = by.get((i, b))
            cells.append("–" if r is None else f"{r['median_us']:.1f}" + (" (**wrong**)" if r["wrong"] else ""))
        for i in impls:
            r = by.get((i, b))
            cells.append("–" if r is None else f"{r['busbw']:.3f} ({100 * r['busbw'] / link_gbs:.0f} %)")
        lines.append(f"| {fmt_size(b)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pick_rates(out):
    """Per host count, the highest calibrated rate whose every stream reached 90 % of the TCP ceiling (else the lowest)."""
    picks = {}
    for r in calibration(out):
        bps = rate_bps(r["rate"])
        if not bps:
            continue
        best = picks.get(r["n"])
        link = r["bound_by"] == "link"
        if best is None or (link and (not best[2] or bps > best[1])) or (not link and not best[2] and bps < best[1]):
            picks[r["n"]] = (r["rate"], bps, link)
    return picks


def link_rates(out, ns):
    """Host count -> (tc rate, bytes per second, label) of the benchmarks, from n<N>/rate and n<N>/nics (run.sh --nics):
    with several network ports per host the link is all of them together (bytes per second summed)."""
    rates = {}
    for n in ns:
        with open(os.path.join(out, f"n{n}", "rate")) as f:
            rate = f.read().strip()
        nics_file = os.path.join(out, f"n{n}", "nics")
        nics = int(open(nics_file).read().strip()) if os.path.exists(nics_file) else 1
        bps = rate_bps(rate)
        rates[n] = (rate, nics * bps / 8, rate_label(bps) if nics == 1 else f"{nics} × {rate_label(bps)}")
    return rates


def headline(rows, links):
    """The issue's summary: 4 B latency, 1 MiB and largest busbw, all_sum, per N."""
    lines = ["| hosts | op | 4 B (all_gather: smallest) median µs: " + " / ".join(IMPL_LABEL[i] for i in IMPL_ORDER) +
             " | 1 MiB busbw GB/s | largest size busbw GB/s (share of link) |", "|---:|---|---|---|---|"]
    for n in sorted({r["n"] for r in rows}):
        link_gbs = links[n][1] / 1e9
        for op in ("all_sum", "all_gather"):
            sel = [r for r in rows if r["n"] == n and r["op"] == op]
            if not sel:
                continue
            small, big = min(r["bytes"] for r in sel), max(r["bytes"] for r in sel)

            def cell(b, f):
                vals = []
                for i in IMPL_ORDER:
                    r = next((r for r in sel if r["impl"] == i and r["bytes"] == b), None)
                    vals.append("–" if r is None else f(r))
                return " / ".join(vals)

            def median(r):
                return f"{r['median_us']:.0f}"

            def busbw(r):
                return f"{r['busbw']:.3f}"

            def busbw_share(r):
                return f"{r['busbw']:.3f} ({100 * r['busbw'] / link_gbs:.0f} %)"
            lines.append(f"| {n} ({links[n][2]}) | {op} | {cell(small, median)} | {cell(1 << 20, busbw)} | {fmt_size(big)}: {cell(big, busbw_share)} |")
    return "\n".join(lines)


def ranks_per_host(rows, n):
    """The ranks per host of the rows of n hosts (run.sh --ranks-per-host)."""
    return max(r["ranks"] for r in rows if r["n"] == n) // n


def plot(rows, n, link_gbs, link_label, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colors = {"jdist": "#1f77b4", "ring": "#9467bd", "mpi": "#d62728", "gloo": "#2ca02c"}
    styles = {"all_sum": "-", "all_gather": "--"}
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))
    for impl in IMPL_ORDER:
        for op in ("all_sum", "all_gather"):
            sel = sorted((r for r in rows if r["n"] == n and r["impl"] == impl and r["op"] == op), key=lambda r: r["bytes"])
            if not sel:
                continue
            x = [r["bytes"] for r in sel]
            kw = dict(color=colors[impl], linestyle=styles[op], marker="o", markersize=3.5, label=f"{IMPL_LABEL[impl]} {op}")
            axes[0].plot(x, [r["busbw"] for r in sel], **kw)
            axes[1].plot(x, [r["median_us"] for r in sel], **kw)
            axes[2].plot(x, [r["busbw"] / link_gbs for r in sel], **kw)
    axes[0].axhline(link_gbs, color="grey", linewidth=0.8)
    axes[2].axhline(1.0, color="grey", linewidth=0.8)
    axes[2].axhline(TCP_PAYLOAD_SHARE, color="grey", linewidth=0.8, linestyle=":")
    titles = ["bus bandwidth (GB/s)", "median latency (µs, log)", "busbw / link rate"]
    sizes = sorted({r["bytes"] for r in rows if r["n"] == n})
    ticks = [1 << e for e in range(2, 41, 4) if sizes[0] <= 1 << e <= sizes[-1]]  # 4 B, 64 B, 1 KiB, 16 KiB, ...
    for ax, t in zip(axes, titles):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [fmt_size(b).replace(" ", "") for b in ticks])
        ax.set_xlabel("message size (bytes)")
        ax.set_title(t)
        ax.grid(True, which="major", alpha=0.3)
    axes[1].set_yscale("log")
    axes[2].set_ylim(0, 1.1)
    axes[0].legend(fontsize=8)
    per_host = ranks_per_host(rows, n)
    fig.suptitle(f"simulated cluster: {n} hosts (namespaces), link {link_label} each way (tc tbf), "
                 + ("one rank per host" if per_host == 1 else f"{per_host} ranks per host"))
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def tuned(out):
    """The --tune sections: per host count, each op's median µs per algorithm and size (fastest in bold), and the
    rules jdist bench --tune wrote from them."""
    md = []
    for path in sorted(glob.glob(os.path.join(out, "n*", "tune.json")), key=lambda p: int(os.path.basename(os.path.dirname(p))[1:])):
        d = os.path.dirname(path)
        n = int(os.path.basename(d)[1:])
        try:
            with open(path) as f:
                rows = json.load(f)
        except (OSError, ValueError):
            md += [f"## jdist bench --tune, {n} hosts", "", f"no results: see {os.path.relpath(d, out)}/tune.log", ""]
            continue
        md += [f"## jdist bench --tune, {n} hosts (median µs per algorithm; fastest in bold)", ""]
        for op in dict.fromkeys(r["op"] for r in rows):
            algos = list(dict.fromkeys(r["algorithm"] for r in rows if r["op"] == op))
            md += [f"{op}:", "", "| size | " + " | ".join(algos) + " |", "|---:|" + "---:|" * len(algos)]
            for b in sorted({r["bytes"] for r in rows if r["op"] == op}):
                t = {r["algorithm"]: r["medianMicros"] for r in rows if r["op"] == op and r["bytes"] == b}
                best = min(t.values())
                md.append(f"| {fmt_size(b)} | " + " | ".join(
                    ("**{:.0f}**" if t.get(a) == best else "{:.0f}").format(t[a]) if a in t else "–" for a in algos) + " |")
            md.append("")
        rules = os.path.join(d, "rules.json")
        if os.path.exists(rules):
            md += [f"Rules written ({os.path.relpath(rules, out)}; a job reads them with JDIST_ALGO_RULES):", "", "```json",
                   open(rules).read().strip(), "```", ""]
    return md


def report(out):
    rows = load_results(out)
    links = link_rates(out, sorted({r["n"] for r in rows}))
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["impl", "op", "mode", "n", "ranks", "bytes", "median_us", "p99_us", "busbw", "wrong"])
        w.writeheader()
        w.writerows(rows)
    md = ["# Simulated cluster: report", ""]
    meta = os.path.join(out, "meta.txt")
    if os.path.exists(meta):
        md += ["```", open(meta).read().strip(), "```", ""]
    cal = calibration(out)
    if cal:
        md += ["## Calibration (iperf3 in every namespace at once)", "", calibration_table(cal, out), ""]
    md += [f"## Side by side (busbw as a share of the link rate; the TCP payload ceiling is {100 * TCP_PAYLOAD_SHARE:.1f} % "
           "of the link)", "", headline(rows, links), ""]
    for n, (rate, _, _) in sorted(links.items()):
        verdict = next((c["bound_by"] for c in cal if c["n"] == n and c["rate"] == rate), None)
        if verdict != "link":
            md += [f"**{n} hosts at {rate}: " + ("not calibrated" if verdict is None else "the calibration found this rate "
                   "bound by the CPUs, not the link") + "; these figures measure the machine as much as the link.**", ""]
    md += ["Modes: jdist and Open MPI out-of-place (into a preallocated output); Gloo's all-reduce in place, its all-gather "
           "into preallocated views. Medians of rank 0's per-call times.", ""]
    for n in sorted({r["n"] for r in rows}):
        link_gbs = links[n][1] / 1e9
        png = f"cluster-n{n}.png"
        plot(rows, n, link_gbs, links[n][2], os.path.join(out, png))
        per_host = ranks_per_host(rows, n)
        md += [f"### {n} hosts" + ("" if per_host == 1 else f" × {per_host} ranks") + f", link {links[n][2]} "
               f"({link_gbs:.3f} GB/s)", "", f"![{n} hosts]({png})", ""]
        for op in ("all_sum", "all_gather"):
            if any(r["n"] == n and r["op"] == op for r in rows):
                md += [f"{op}:", "", table(rows, n, op, link_gbs), ""]
    wrong = [r for r in rows if r["wrong"]]
    if wrong:
        md += ["**Rows with wrong results:** " + ", ".join(f"{r['impl']} {r['op']} n={r['n']} {r['bytes']} B" for r in wrong), ""]
    md += tuned(out)
    ph = phases(out)
    if ph:
        md += ["## Phases (wall time, whole-machine CPU busy, load average before → after, exit status, TCP segments "
               "the hosts retransmitted, packets the links' tbf queues dropped on the sending / receiving side)", "",
               "| hosts | phase | seconds | CPU busy | load | exit | TCP retransmitted | tbf drops: sending / receiving |",
               "|---:|---|---:|---:|---|---:|---|---|"]
        md += [f"| {p['n']} | {p['phase']} | {p['seconds']} | {p['cpu_busy_pct']} % | {p['load1_before']} → {p['load1_after']} | {p['exit']} "
               f"| {retransmitted(p)} | {p.get('tbf_drops_sending') or '–'} / {p.get('tbf_drops_receiving') or '–'} |" for p in ph]
        md += ["", f"Total measured: {sum(float(p['seconds']) for p in ph) / 60:.1f} min."]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["calibration", "pick-rates", "report"])
    p.add_argument("out")
    a = p.parse_args()
    if a.what == "calibration":
        rows = calibration(a.out)
        print(calibration_table(rows, a.out))
    elif a.what == "pick-rates":
        for n, (rate, _, _) in sorted(pick_rates(a.out).items()):
            print(n, rate)
    else:
        report(a.out)


if __name__ == "__main__":
    main()
