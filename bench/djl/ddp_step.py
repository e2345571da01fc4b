"""Step time of PyTorch DDP with Gloo on the model of DjlStepBench.java (bench/djl-ddp.sh): an MLP 1024-2048-2048-2048-10,
synthetic input, the same per-rank batch at every rank count, one intra-op thread per rank. Prints one CSV line:
ranks,mode,params,batch,median_step_ms,p90_step_ms,median_comm_ms,comm_share
comm is estimated as (median step) - (median step under no_sync(), which skips the all-reduce)."""
import argparse, os, statistics, time
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def model():
    return torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
                               torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10))


def times(step, n, warmup):
    for _ in range(warmup):
        step()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        out.append((time.perf_counter() - t0) * 1e3)
    return sorted(out)


def run(rank, args):
    torch.set_num_threads(1)
    torch.manual_seed(1)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    net = torch.nn.parallel.DistributedDataParallel(model())
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x, y = torch.randn(args.batch, 1024), torch.randint(0, 10, (args.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()

    def local_step():
        with net.no_sync():
            step()

    s = times(step, args.steps, args.warmup)
    local = times(local_step, args.steps, args.warmup)
    med, p90, lmed = s[len(s) // 2], s[int(len(s) * 0.9 + 0.999) - 1], local[len(local) // 2]
    params = sum(p.numel() for p in net.parameters())
    if rank == 0:
        comm = max(0.0, med - lmed) if args.ranks > 1 else 0.0
        print(f"{args.ranks},torch-ddp-gloo,{params},{args.batch},{med:.1f},{p90:.1f},{comm:.1f},{comm / med:.2f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--port", type=int, default=29511)
    a = ap.parse_args()
    mp.spawn(run, args=(a,), nprocs=a.ranks, join=True)
