#!/usr/bin/env python3
"""A real PyTorch job (ProcessGroupNCCL) for the NCCL profiler plugin's proof on hardware.

    NCCL_PROFILER_PLUGIN=/path/libppspec_nccl_profiler.so PPSPEC_TRACE_DIR=traces \
        python3 scripts/dev/torch_plugin_job.py --world 2 [--fault extra_broadcast] [--bench N]

One process per rank, rank r on GPU r % --gpus (1 by default). Where ranks share a GPU each process
gets its own NCCL_HOSTID, so NCCL takes the ranks for different hosts and connects them through its
socket transport (a multi-rank job on a one-GPU machine). The patterns ProcessGroupNCCL offers: all_reduce, broadcast, all_gather,
reduce_scatter, send/recv, batch_isend_irecv, several process groups (new_group), and a CUDA
graph of all-reduces replayed. Each call names its site to the plugin through ctypes
(ppspec_profiler_set_call_site), so the watcher's reports say where in this file it was made.
With --world 1 the same patterns run on a one-rank group: NCCL copies a one-rank collective
locally and tells its profiler nothing of it.
"""
import argparse
import ctypes
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def plugin():
    path = os.environ.get("NCCL_PROFILER_PLUGIN")
    if not path:
        return None
    lib = ctypes.CDLL(path)  # the library NCCL loaded: the same instance
    lib.ppspec_profiler_set_call_site.argtypes = [ctypes.c_char_p]
    return lib


def site(lib, where):
    if lib is not None:
        lib.ppspec_profiler_set_call_site(where.encode())


def patterns(rank, world, lib, fault):
    t = torch.ones(1024, device="cuda")
    site(lib, "torch_plugin_job.py: all_reduce")
    dist.all_reduce(t)
    site(lib, "torch_plugin_job.py: broadcast")
    dist.broadcast(t, src=world - 1)
    out = torch.empty(1024 * world, device="cuda")
    site(lib, "torch_plugin_job.py: all_gather")
    dist.all_gather_into_tensor(out, t)
    site(lib, "torch_plugin_job.py: reduce_scatter")
    dist.reduce_scatter_tensor(t, out)
    if world > 1:
        peer = (rank + 1) % world
        site(lib, "torch_plugin_job.py: send/recv")
        if rank == 0:
            dist.send(t, peer)
        elif rank == 1:
            dist.recv(t, 0)
        site(lib, "torch_plugin_job.py: batch_isend_irecv")
        ops = [dist.P2POp(dist.isend, t, peer), dist.P2POp(dist.irecv, out[:1024], (rank - 1) % world)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
    groups = [dist.new_group(list(range(world))) for _ in range(4)]
    for i, g in enumerate(groups):
        site(lib, f"torch_plugin_job.py: group {i} all_reduce")
        dist.all_reduce(t, group=g)
    # A CUDA graph of three all-reduces, replayed five times (warmed up eagerly first, as PyTorch asks).
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        dist.all_reduce(t)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    site(lib, "torch_plugin_job.py: captured all_reduce")
    with torch.cuda.graph(g):
        for _ in range(3):
            dist.all_reduce(t)
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    if fault == "extra_broadcast" and world > 1:
        # The seed PR's bug: the last rank posts a broadcast the others never post.
        if rank == world - 1:
            print(f"rank {rank}: fault extra_broadcast at {time.time_ns()} ns", flush=True)
            site(lib, "torch_plugin_job.py: broadcast drafts (posted twice)")
            dist.broadcast(t, src=world - 1)
        site(lib, "torch_plugin_job.py: all_reduce after the fault")
        dist.all_reduce(t)
        torch.cuda.synchronize()


def bench(iterations, lib):
    t = torch.ones(2, device="cuda")
    for _ in range(100):
        dist.all_reduce(t)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iterations):
        dist.all_reduce(t)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e6 / iterations


def join_job(rank, world, gpus, store, timeout=None):
    """This process as rank `rank` of a ProcessGroupNCCL job, on GPU rank % gpus; where ranks share a
    GPU, NCCL must take them for different hosts (NCCL_HOSTID: its socket transport)."""
    gpu = rank % gpus
    if world > gpus:
        os.environ["NCCL_HOSTID"] = f"ppspec-torch-rank{rank}"
    os.environ["RANK"] = str(rank)
    torch.cuda.set_device(gpu)
    extra = {"timeout": timeout} if timeout is not None else {}
    dist.init_process_group("nccl", init_method=f"file://{store}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", gpu), **extra)


def worker(rank, args):
    join_job(rank, args.world, args.gpus, args.store)
    lib = plugin()
    if args.bench:
        print(f"bench rank {rank} of {args.world}: {args.bench} all_reduce of 8 bytes: {bench(args.bench, lib):.3f} us per operation",
              flush=True)
    else:
        patterns(rank, args.world, lib, args.fault)
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--fault", default="none")
    p.add_argument("--bench", type=int, default=0)
    p.add_argument("--gpus", type=int, default=1, help="rank r runs on GPU r %% gpus")
    p.add_argument("--store", default=f"/tmp/ppspec-torch-store-{os.getpid()}")
    args = p.parse_args()
    if os.path.exists(args.store):
        os.remove(args.store)
    mp.start_processes(worker, args=(args,), nprocs=args.world, start_method="spawn")


if __name__ == "__main__":
    sys.exit(main())
