"""Gloo's all-reduce and all-gather (PyTorch's gloo backend), timed and reported like `jdist bench`.

Run on every rank by `jdist launch` (bench/cluster/run.sh does it), which sets MLX_RANK:
    GLOO_BENCH_MASTER=ADDR:PORT GLOO_BENCH_WORLD_SIZE=N GLOO_SOCKET_IFNAME=eth0 python3 gloo_bench.py --ops all_sum,all_gather \
        --sweep MIN:MAX:FACTOR:WARMUP:ITERS [--sweep ...]
Rank 0 prints CSV with jdist bench --csv's columns. Conventions as jdist bench: float32; size = the largest
buffer of one call (the output of all_gather); `warmup` untimed calls then `iters` calls timed one by one;
median and p99 of rank 0's times; busbw = algbw x 2(n-1)/n (all_sum) or (n-1)/n (all_gather); one call on
fresh inputs is checked on every rank afterwards. Gloo's all-reduce works in place (mode in-place); its
all-gather writes into preallocated views of one output tensor (out-of-place).
"""
import argparse
import datetime
import os
import resource
import sys
import time

import torch
import torch.distributed as dist


CHUNK = 1 << 20  # elements per step of filling and checking: bounded temporaries at any size


def fill(t, rank):
    """t[i] = (7 rank + i) mod 5, jdist bench's inputs (exact in float32 after summing)."""
    for lo in range(0, t.numel(), CHUNK):
        hi = min(t.numel(), lo + CHUNK)
        t[lo:hi] = ((torch.arange(lo, hi, dtype=torch.int64) + 7 * rank) % 5).to(torch.float32)


def count_wrong(got, gather, n, in_count):
    """Elements of got that differ from the expected all-gather or all-reduce output."""
    # the inputs have period 5, so the expected sum over ranks does too
    period_sum = torch.tensor([sum((7 * q + k) % 5 for q in range(n)) for k in range(5)], dtype=torch.float32)
    wrong = 0
    for lo in range(0, got.numel(), CHUNK):
        hi = min(got.numel(), lo + CHUNK)
        idx = torch.arange(lo, hi, dtype=torch.int64)
        if gather:
            expected = ((idx % in_count + 7 * (idx // in_count)) % 5).to(torch.float32)
        else:
            expected = period_sum[idx % 5]
        wrong += int((got[lo:hi] != expected).sum())
    return wrong


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ops", default="all_sum")
    p.add_argument("--sweep", action="append", required=True, help="MIN:MAX:FACTOR:WARMUP:ITERS (bytes)")
    p.add_argument("--timeout-s", type=int, default=600)
    a = p.parse_args()
    rank, n = int(os.environ["MLX_RANK"]), int(os.environ["GLOO_BENCH_WORLD_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://" + os.environ["GLOO_BENCH_MASTER"], rank=rank, world_size=n,
                            timeout=datetime.timedelta(seconds=a.timeout_s))
    if rank == 0:
        print("op,mode,ranks,size_bytes,count,type,redop,median_us,p99_us,algbw_GBps,busbw_GBps,wrong,peak_rss_bytes", flush=True)
    for op in a.ops.split(","):
        if op not in ("all_sum", "all_gather"):
            sys.exit(f"gloo_bench: unknown op {op} (all_sum, all_gather)")
        gather = op == "all_gather"
        for sweep in a.sweep:
            lo, hi, factor, warmup, iters = (int(x) for x in sweep.split(":"))
            sizes = [lo]
            while sizes[-1] * factor <= hi:
                sizes.append(sizes[-1] * factor)
            if sizes[-1] != hi:
                sizes.append(hi)  # as jdist bench's sweep: MAX is always measured
            for size in sizes:
                row(op, gather, rank, n, size, warmup, iters)
    dist.destroy_process_group()


def row(op, gather, rank, n, size, warmup, iters):
    in_count = max(1, size // 4 // n) if gather else max(1, size // 4)
    out_count = in_count * n if gather else in_count
    x = torch.empty(in_count, dtype=torch.float32)
    fill(x, rank)
    out = torch.empty(out_count, dtype=torch.float32)
    views = list(out.split(in_count))

    def call():
        if gather:
            dist.all_gather(views, x)
        else:
            dist.all_reduce(x)

    times = []
    for it in range(-warmup, iters):
        t0 = time.perf_counter_ns()
        call()
        t = time.perf_counter_ns() - t0
        if it >= 0:
            times.append(t)
    # check one call on fresh inputs (the in-place all-reduce changed x)
    fill(x, rank)
    out.fill_(-1)
    call()
    wrong = torch.tensor([count_wrong(out if gather else x, gather, n, in_count)], dtype=torch.int64)
    dist.all_reduce(wrong)
    rss = torch.tensor([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024], dtype=torch.int64)
    dist.all_reduce(rss, op=dist.ReduceOp.MAX)
    times.sort()
    med = times[len(times) // 2] / 1e3
    p99 = times[min(len(times) - 1, -(-len(times) * 99 // 100) - 1)] / 1e3
    size_bytes = out_count * 4
    algbw = size_bytes / (med * 1e3)
    bus = (n - 1) / n if gather else 2 * (n - 1) / n
    if rank == 0:
        print(f"{op},{'out-of-place' if gather else 'in-place'},{n},{size_bytes},{out_count},float32,"
              f"{'none' if gather else 'sum'},{med:.3f},{p99:.3f},{algbw:.4f},{algbw * bus:.4f},{int(wrong[0])},{int(rss[0])}",
              flush=True)


if __name__ == "__main__":
    main()
