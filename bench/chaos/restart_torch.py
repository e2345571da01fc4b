"""The restart chaos trials' counterpart under torchrun (bench/chaos/restart.sh --torch): the data-parallel example of
examples/DataParallel.java in PyTorch (the same sizes: 960 examples, an MLP 32 -> 32 -> 1 with ReLU, plain SGD 0.05, 200
steps, 4 ranks, one all_reduce of the flattened gradients per step over Gloo), the same checkpoints (each rank its own
directory, the newest two kept, written to a temporary file, fsync, os.replace; the ranks agree with all_reduce MIN on
the step they all hold) and the same fault drill (DP_FAULT=RANK:STEP:KILL|STOP, first start only). torchrun's restart
number is TORCHELASTIC_RESTART_COUNT. The first argument is a marker the script finds leftovers by; it is not used."""
import os
import signal
import sys
import zlib
from datetime import timedelta

import torch
import torch.distributed as dist

EXAMPLES, FEATURES, HIDDEN, ITERATIONS, LR = 960, 32, 32, 200, 0.05


def steps_in(d):
    if not os.path.isdir(d):
        return []
    return sorted(int(f[5:-3]) for f in os.listdir(d) if f.startswith("step-") and f.endswith(".pt"))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=int(os.environ.get("DP_GLOO_TIMEOUT", "1800"))))
    rank, n = dist.get_rank(), dist.get_world_size()
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(42)
    w_star = torch.randn(FEATURES, generator=g) / FEATURES ** 0.5
    x = torch.randn(EXAMPLES, FEATURES, generator=g)
    y = x @ w_star + 0.01 * torch.randn(EXAMPLES, generator=g)
    rows = EXAMPLES // n
    xl, yl = x[rank * rows:(rank + 1) * rows], y[rank * rows:(rank + 1) * rows]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 1))
    params = list(model.parameters())

    ck = os.environ.get("DP_CHECKPOINTS")
    every = int(os.environ.get("DP_SAVE_EVERY", "20"))
    first = 0
    if ck:
        mine = os.path.join(ck, "rank-%d" % rank)
        saved = steps_in(mine)
        t = torch.tensor([saved[-1] if saved else -1], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
        if int(t) >= 0:
            first = int(t)
            state = torch.load(os.path.join(mine, "step-%d.pt" % first))
            with torch.no_grad():
                for p, v in zip(params, state["params"]):
                    p.copy_(v)
        print("rank %d: restart %d, starting at step %d" % (rank, restart, first), flush=True)
    fault = os.environ.get("DP_FAULT", "").split(":")

    for it in range(first, ITERATIONS):
        if len(fault) == 3 and int(fault[0]) == rank and int(fault[1]) == it and restart == 0:
            print("rank %d: SIG%s to myself before step %d (DP_FAULT)" % (rank, fault[2], it), flush=True)
            os.kill(os.getpid(), getattr(signal, "SIG" + fault[2]))
        loss = 0.5 * ((model(xl).squeeze(1) - yl) ** 2).mean()
        model.zero_grad()
        loss.backward()
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        dist.all_reduce(flat)
        flat /= n
        with torch.no_grad():
            off = 0
            for p in params:
                p -= LR * flat[off:off + p.numel()].view_as(p)
                off += p.numel()
        if ck and (it + 1) % every == 0:
            os.makedirs(mine, exist_ok=True)
            final = os.path.join(mine, "step-%d.pt" % (it + 1))
            tmp = final + ".tmp"
            with open(tmp, "wb") as f:
                torch.save({"step": it + 1, "params": [p.detach().clone() for p in params]}, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
            for old in steps_in(mine)[:-2]:
                os.remove(os.path.join(mine, "step-%d.pt" % old))

    with torch.no_grad():
        local = 0.5 * ((model(xl).squeeze(1) - yl) ** 2).mean()
    t = local.reshape(1).clone()
    dist.all_reduce(t)
    flat = torch.cat([p.detach().reshape(-1) for p in params])
    mx, mn = flat.clone(), flat.clone()
    dist.all_reduce(mx, op=dist.ReduceOp.MAX)
    dist.all_reduce(mn, op=dist.ReduceOp.MIN)
    identical = torch.equal(mx, flat) and torch.equal(mn, flat)
    print("rank %d of %d: weights crc32=%08x" % (rank, n, zlib.crc32(flat.numpy().tobytes())), flush=True)
    if rank == 0:
        print("loss %.8f after %d iterations; %d ranks x %d examples" % (float(t) / n, ITERATIONS, n, rows), flush=True)
    if not identical:
        print("rank %d: weights differ from another rank's after training" % rank, file=sys.stderr, flush=True)
        sys.exit(1)
    if rank == 0:
        print("weights identical on all %d ranks" % n, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
