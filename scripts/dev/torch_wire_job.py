#!/usr/bin/env python3
"""The seed PR's wire pattern as a real PyTorch job (ProcessGroupNCCL), clean or with one fault.

    python3 scripts/dev/torch_wire_job.py --world 2 --gpus 2 [--fault NAME] [--watchdog S] [--steps 6]

One process per rank. A pipeline of `world` stages: every step each stage receives the previous
stage's activations and sends its own on (p2p on the default group), then the last stage broadcasts
`sampled` i64 [N, K+1], `counts` i32 [2, N] and `drafts` i64 [N, K] to every rank on a process group
of their own (new_group), and every rank's host reads `sampled` back, as vLLM's driver reads the
sampled token ids. Every call is synchronous (async_op=False): PyTorch makes the current stream wait
for it, so a rank's calls run in the order it made them, across groups, as in vLLM.

The faults, at step --fault-step (3), each the C++ wire job's (watch/nccl_profiler/jobs/nccl_wire_job.cc)
but for inverted_order:
  skipped_collective   the last rank does not post its `drafts` broadcast
  extra_broadcast      the last rank posts `drafts` twice (the seed PR's double post)
  size_mismatch        rank 0's `sampled` is [N] instead of [N, K+1]
  dtype_mismatch       the last rank's `counts` is i64 instead of i32
  wrong_peer           rank 0 sends its activations to rank 2 instead of rank 1 (needs --world 3)
  inverted_order       rank 0 posts the step's three broadcasts (their group) before its activations
                       send (the default group): the other order of the last rank's
  ungrouped_exchange   ranks 0 and 1 each send the other --exchange-mib MiB, then receive, ungrouped

Rank r runs on GPU r % --gpus. Where ranks share a GPU (world > gpus) each process gets its own
NCCL_HOSTID, so NCCL takes them for different hosts and connects them through its socket transport.
Each rank prints `rank R: fault NAME at T ns` (CLOCK_REALTIME, as the plugin's trace and the
watcher's reports) just before its faulty call, and `rank R: done` at the end. Each call names its
site to ppspec's NCCL profiler plugin when NCCL loaded it (ppspec_profiler_set_call_site, ctypes).
"""
import argparse
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from torch_plugin_job import join_job, plugin, site

FAULTS = ("none", "skipped_collective", "extra_broadcast", "size_mismatch", "dtype_mismatch", "wrong_peer",
          "inverted_order", "ungrouped_exchange")
N, K, HIDDEN = 4, 5, 1024  # requests per step, drafts per request, activation width (f16)


class Sites:
    """Names each call's site to the plugin (torch_plugin_job.py's hook), prefixed with this file."""

    def __init__(self):
        self.lib = plugin()

    def at(self, where):
        site(self.lib, f"torch_wire_job.py: {where}")


class Job:
    def __init__(self, rank, args, feedback):
        self.rank, self.args, self.feedback = rank, args, feedback
        self.world = args.world
        self.last = rank == args.world - 1
        self.device = torch.device("cuda", torch.cuda.current_device())
        self.sites = Sites()
        self.faulty_step = -1

    def fault(self, step, name, on_rank=True):
        return step == self.args.fault_step and self.args.fault == name and on_rank

    def say_fault(self, step):
        if step == self.args.fault_step and self.args.fault != "none" and self.faulty_step != step:
            self.faulty_step = step
            print(f"rank {self.rank}: fault {self.args.fault} at {time.time_ns()} ns", flush=True)

    def broadcast(self, name, shape, dtype, step):
        t = torch.full(shape, step, dtype=dtype, device=self.device)
        self.sites.at(f"feedback.{name}")
        dist.broadcast(t, src=self.world - 1, group=self.feedback)
        return t

    def activations(self, step):
        x = torch.ones(N, HIDDEN, dtype=torch.float16, device=self.device)
        if self.rank > 0:
            self.sites.at("activations recv")
            dist.recv(x, src=self.rank - 1)
        if not self.last:
            wrong = self.fault(step, "wrong_peer", self.rank == 0 and self.world > 2)
            self.sites.at("activations send (wrong peer)" if wrong else "activations send")
            dist.send(x, dst=2 if wrong else self.rank + 1)

    def feedback_broadcasts(self, step):
        narrow = self.fault(step, "size_mismatch", self.rank == 0)
        sampled = self.broadcast("sampled", (N,) if narrow else (N, K + 1), torch.int64, step)
        wide = self.fault(step, "dtype_mismatch", self.last)
        self.broadcast("counts", (2, N), torch.int64 if wide else torch.int32, step)
        if not self.fault(step, "skipped_collective", self.last):
            self.broadcast("drafts", (N, K), torch.int64, step)
        if self.fault(step, "extra_broadcast", self.last):
            self.broadcast("drafts (posted twice)", (N, K), torch.int64, step)
        return sampled

    def ungrouped_exchange(self, step):
        if not self.fault(step, "ungrouped_exchange", self.rank < 2):
            return
        peer = 1 - self.rank
        big = torch.ones(self.args.exchange_mib << 18, dtype=torch.float32, device=self.device)
        self.sites.at("ungrouped exchange send")
        dist.send(big, dst=peer)
        self.sites.at("ungrouped exchange recv")
        dist.recv(big, src=peer)

    def step(self, step):
        self.say_fault(step)
        inverted = self.fault(step, "inverted_order", self.rank == 0)
        if inverted:
            sampled = self.feedback_broadcasts(step)
            self.activations(step)
        else:
            self.activations(step)
            sampled = self.feedback_broadcasts(step)
        self.ungrouped_exchange(step)
        return sampled.cpu()  # the host reads the sampled tokens: it waits here when the step hangs


def worker(rank, args):
    join_job(rank, args.world, args.gpus, args.store, datetime.timedelta(seconds=args.watchdog))
    feedback = dist.new_group(list(range(args.world)))
    job = Job(rank, args, feedback)
    for s in range(args.steps):
        job.step(s)
    torch.cuda.synchronize()
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--gpus", type=int, default=max(1, torch.cuda.device_count()))
    p.add_argument("--fault", default="none", choices=FAULTS)
    p.add_argument("--fault-step", type=int, default=3)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--watchdog", type=float, default=600.0, help="ProcessGroupNCCL's timeout, seconds")
    p.add_argument("--exchange-mib", type=int, default=64)
    p.add_argument("--store", default=f"/tmp/ppspec-wire-store-{os.getpid()}")
    args = p.parse_args()
    if args.fault == "wrong_peer" and args.world < 3:
        p.error("wrong_peer needs --world 3 (a rank's only other peer cannot be the wrong one)")
    if args.world < 2:
        p.error("--world must be at least 2")
    if os.path.exists(args.store):
        os.remove(args.store)
    # Plain processes, not mp.spawn's: spawn kills every rank the moment one fails, before the
    # others' watchdogs have written their Flight Recorder dumps; here each rank ends on its own.
    context = mp.get_context("spawn")
    ranks = [context.Process(target=worker, args=(r, args)) for r in range(args.world)]
    for r in ranks:
        r.start()
    for r in ranks:
        r.join()
    codes = [r.exitcode for r in ranks]
    print(f"exit codes: {codes}", flush=True)
    return 0 if all(c == 0 for c in codes) else 1


if __name__ == "__main__":
    sys.exit(main())
