#!/usr/bin/env python3
"""Real PyTorch jobs that record Flight Recorder dumps of the shapes real jobs write.

    python3 record_shapes.py OUTDIR [CASE ...]        (no CASE: every case; --list: the cases)

Each case is a job of W processes (4, or 8 for the pipeline cases). NCCL cases share one GPU: each
process has its own NCCL_HOSTID, so NCCL takes them for different hosts and connects them through its
socket transport (real positional matching, real blocking, real hangs). Gloo cases run on the CPU.
Groups of the 4-rank jobs: tp {0,1} {2,3}; pp {0,2} {1,3}; ep {0,1,2,3} (expert parallel). A step:
an all_reduce on the rank's tp group, the case's collective on ep, a broadcast of sampled ids from the
last stage on the pp group, and the activations from stage 0 to stage 1 (a batch_isend_irecv of one
operation, as vLLM's send_tensor_dict; the sync cases use plain send/recv). Calls are async_op=True
and each step waits for its works (work.wait(): the current stream waits for them, the host does
not), so a stuck operation holds every later one of its rank behind it, as in a synchronous job.

Each rank writes OUTDIR/CASE/pickle/rank_N (`_dump_nccl_trace`, with stacks) and
OUTDIR/CASE/json/rank_N.json (`_dump_nccl_trace_json`), or the `_dump_fr_trace*` pair for Gloo,
after sleeping long enough for whatever can complete to complete, and OUTDIR/CASE/completed.txt says
how many of each rank's works completed. What each case did and what a correct checker reports:
README.md beside this file.
"""
import datetime
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

# name: (what the program does, options). Options: world, gloo, steps, buffer (TORCH_FR_BUFFER_SIZE),
# timing (TORCH_NCCL_ENABLE_TIMING), big (64 MiB activations, so a send cannot complete eagerly).
CASES = {
    "a2a_uneven_clean": ("all_to_all_single with uneven splits on ep (rank r sends r + j + 1 rows to member j)", {}),
    "a2a_uneven_total": ("as a2a_uneven_clean; at step 3 rank 2 expects one row more from rank 0 than rank 0 sends", {}),
    "a2a_skip": ("as a2a_uneven_clean; at step 3 rank 3 skips its all_to_all", {}),
    "allgather_uneven_clean": ("uneven all_gather on ep (rank r contributes r + 1 rows)", {}),
    "allgather_uneven_size": ("as allgather_uneven_clean; at step 3 rank 1 contributes 3 rows (and gathers 3 from itself) where the "
                              "others expect 2", {}),
    "rs_coalesced_clean": ("three reduce_scatter_tensor and two all_gather_into_tensor in _coalescing_manager blocks on ep (FSDP's shape)", {}),
    "rs_coalesced_short": ("as rs_coalesced_clean; at step 3 rank 3 coalesces two reduce_scatters where the others coalesce three", {}),
    "misc_clean": ("barrier, all_gather_into_tensor, reduce_scatter_tensor, uneven reduce_scatter, all_to_all of lists, reduce, gather", {}),
    "batch_skip_recv": ("at step 3 rank 2 skips its batched receive of rank 0's activations (8 x 64 f32)", {}),
    "batch_skip_recv_big": ("as batch_skip_recv with 64 MiB activations (no eager send)", {"big": True}),
    "batch_skip_recv_timing": ("as batch_skip_recv_big with TORCH_NCCL_ENABLE_TIMING=1 (started states)", {"big": True, "timing": True}),
    "sync_skip_recv": ("synchronous send/recv (async_op=False) of 64 MiB activations; at step 3 rank 2 skips its receive", {"big": True}),
    "sync_all_skip_recv": ("every call synchronous (async_op=False, PyTorch's default) and 64 MiB activations; at step 3 rank 2 skips "
                           "its receive", {"big": True}),
    "kernel_stall": ("at step 3 rank 1's stream runs a kernel that does not finish (torch.cuda._sleep) before its tp all_reduce", {}),
    "kernel_stall_timing": ("as kernel_stall with TORCH_NCCL_ENABLE_TIMING=1 (started states)", {"timing": True}),
    "wrapped_clean": ("120 steps, TORCH_FR_BUFFER_SIZE=300: every ring wrapped", {"steps": 120, "buffer": 300}),
    "wrapped_uneven_clean": ("120 steps, buffer 300; ranks 0 and 1 add an all_reduce per step, so their rings wrap at other points",
                             {"steps": 120, "buffer": 300}),
    "healthy_snapshot": ("200 steps; every rank dumps at step 100 right after posting it, without waiting, and runs on", {"steps": 200}),
    "healthy_inflight": ("60 steps; at step 50 every rank posts a 1 GiB all_reduce on ep and dumps at once, while it runs (rank 3, a "
                         "straggler, posts it 3 s after the others), and runs on", {"steps": 60}),
    "pipeline8_clean": ("8 ranks, pp 8: stage r receives from r - 1 and sends to r + 1 (batch_isend_irecv), last stage broadcasts; "
                        "200 steps, buffer 500", {"world": 8, "steps": 200, "buffer": 500}),
    "gloo_clean": ("Gloo on the CPU: tp all_reduce, uneven all_to_all on ep, pp broadcast, p2p activations", {"gloo": True}),
    "gloo_tp_skip": ("as gloo_clean; at step 3 rank 3 skips its tp all_reduce (group {2,3})", {"gloo": True}),
}


def opt(case, key, default):
    return CASES[case][1].get(key, default)


def dump(outdir, rank, gloo, stacks=True):
    """Both formats, JSON first. A live snapshot takes no stacks: symbolising them takes long enough for
    the operations in flight to finish before the pickle is written."""
    import torch._C._distributed_c10d as c10d
    os.makedirs(os.path.join(outdir, "pickle"), exist_ok=True)
    os.makedirs(os.path.join(outdir, "json"), exist_ok=True)
    if gloo:
        j = c10d._dump_fr_trace_json(includeCollectives=True, onlyActive=False)
        p = c10d._dump_fr_trace(includeCollectives=True, includeStackTraces=stacks, onlyActive=False)
    else:
        j = c10d._dump_nccl_trace_json(includeCollectives=True, onlyActive=False)
        p = c10d._dump_nccl_trace(includeCollectives=True, includeStackTraces=stacks, onlyActive=False)
    with open(os.path.join(outdir, "pickle", f"rank_{rank}"), "wb") as f:
        f.write(p)
    with open(os.path.join(outdir, "json", f"rank_{rank}.json"), "wb") as f:
        f.write(j if isinstance(j, bytes) else j.encode())


class Job:
    def __init__(self, case, rank, world, dev):
        self.case, self.rank, self.world, self.dev = case, rank, world, dev
        self.gloo = opt(case, "gloo", False)
        self.big = opt(case, "big", False)
        if world == 4:
            self.tp = [dist.new_group([0, 1]), dist.new_group([2, 3])][rank // 2]
            self.pp = [dist.new_group([0, 2]), dist.new_group([1, 3])][rank % 2]
            self.ep = dist.new_group([0, 1, 2, 3])


def moe_dispatch(job, step):
    """MoE dispatch: rank r sends r + j + 1 rows to member j (uneven splits; the totals agree)."""
    r, w = job.rank, job.world
    ins = [r + j + 1 for j in range(w)]
    outs = [i + r + 1 for i in range(w)]
    if job.case == "a2a_uneven_total" and step == 3 and r == 2:
        outs[0] += 1
    if job.case == "a2a_skip" and step == 3 and r == 3:
        return []
    t = torch.ones(sum(ins), 16, device=job.dev)
    o = torch.empty(sum(outs), 16, device=job.dev)
    return [dist.all_to_all_single(o, t, output_split_sizes=outs, input_split_sizes=ins, group=job.ep, async_op=True)]


def uneven_gather(job, step):
    wrong = job.case == "allgather_uneven_size" and step == 3 and job.rank == 1
    mine = torch.ones(3 if wrong else job.rank + 1, 16, device=job.dev)
    outs = [torch.empty(3 if (wrong and i == 1) else i + 1, 16, device=job.dev) for i in range(job.world)]
    return [dist.all_gather(outs, mine, group=job.ep, async_op=True)]


def coalesced(job, step):
    n = 2 if (job.case == "rs_coalesced_short" and step == 3 and job.rank == 3) else 3
    works = []
    with dist._coalescing_manager(group=job.ep, async_ops=True) as cm:
        for i in range(n):
            inp = torch.ones(4 * (i + 1) * job.world, device=job.dev)
            dist.reduce_scatter_tensor(torch.empty(4 * (i + 1), device=job.dev), inp, group=job.ep)
    works += cm.works
    with dist._coalescing_manager(group=job.ep, async_ops=True) as cm:
        for i in range(2):
            dist.all_gather_into_tensor(torch.empty(8 * job.world, device=job.dev), torch.ones(8, device=job.dev), group=job.ep)
    works += cm.works
    return works


def misc(job, step):
    w, r, dev = job.world, job.rank, job.dev
    works = [dist.barrier(group=job.ep, async_op=True)]
    works.append(dist.all_gather_into_tensor(torch.empty(8 * w, device=dev), torch.ones(8, device=dev), group=job.ep, async_op=True))
    works.append(dist.reduce_scatter_tensor(torch.empty(8, device=dev), torch.ones(8 * w, device=dev), group=job.ep, async_op=True))
    ins = [torch.ones(i + 1, device=dev) for i in range(w)]
    works.append(dist.reduce_scatter(torch.empty(r + 1, device=dev), ins, group=job.ep, async_op=True))
    works.append(dist.all_to_all([torch.empty(2, device=dev) for _ in range(w)], [torch.ones(2, device=dev) for _ in range(w)],
                                 group=job.ep, async_op=True))
    works.append(dist.reduce(torch.ones(4, device=dev), dst=0, group=job.ep, async_op=True))
    gather_list = [torch.empty(4, device=dev) for _ in range(w)] if r == 0 else None
    works.append(dist.gather(torch.ones(4, device=dev), gather_list, dst=0, group=job.ep, async_op=True))
    return works


def activations(job, step):
    """Stage 0 -> stage 1 (ranks 0, 1 -> 2, 3)."""
    n = 16 * 1024 * 1024 if job.big else 8 * 64
    a = torch.ones(n, device=job.dev)
    skip = job.case.startswith(("batch_skip_recv", "sync_skip_recv", "sync_all_skip_recv")) and step == 3 and job.rank == 2
    peer = job.rank + 2 if job.rank < 2 else job.rank - 2
    if job.case.startswith(("sync_skip", "sync_all")):
        if job.rank < 2:
            dist.send(a, peer)
        elif not skip:
            dist.recv(a, peer)
        return []
    if job.gloo:
        if skip:
            return []
        return [dist.isend(a, peer) if job.rank < 2 else dist.irecv(a, peer)]
    if skip:
        return []
    return dist.batch_isend_irecv([dist.P2POp(dist.isend if job.rank < 2 else dist.irecv, a, peer)])


def synchronous_step(job, step):
    """Every call synchronous: the default of torch.distributed (no work is returned to wait for)."""
    dist.all_reduce(torch.ones(8, 64, device=job.dev), group=job.tp)
    dist.broadcast(torch.full((8, 1), step, dtype=torch.int64, device=job.dev), src=(job.rank % 2) + 2, group=job.pp)
    activations(job, step)
    return []


def four_rank_step(job, step):
    if job.case.startswith("sync_all"):
        return synchronous_step(job, step)
    works = []
    x = torch.ones(8, 64, device=job.dev)
    if job.case.startswith("kernel_stall") and step == 3 and job.rank == 1:
        torch.cuda._sleep(10 ** 12)  # about 500 s of GPU clock: a kernel that does not finish while the job is watched
    skip_tp = job.case == "gloo_tp_skip" and step == 3 and job.rank == 3
    if not skip_tp:
        works.append(dist.all_reduce(x, group=job.tp, async_op=True))
    if job.case == "wrapped_uneven_clean" and job.rank < 2:
        works.append(dist.all_reduce(x, group=job.tp, async_op=True))
    if job.case.startswith(("a2a", "gloo")):
        works += moe_dispatch(job, step)
    elif job.case.startswith("allgather_uneven"):
        works += uneven_gather(job, step)
    elif job.case.startswith("rs_coalesced"):
        works += coalesced(job, step)
    elif job.case == "misc_clean":
        works += misc(job, step)
    sampled = torch.full((8, 1), step, dtype=torch.int64, device=job.dev)
    works.append(dist.broadcast(sampled, src=(job.rank % 2) + 2, group=job.pp, async_op=True))
    works += activations(job, step)
    return works


def pipeline_step(job, step):
    """pp = world: stage r receives from r - 1, sends to r + 1; the last stage broadcasts sampled ids."""
    r, w = job.rank, job.world
    a = torch.ones(8, 64, device=job.dev)
    ops = []
    if r > 0:
        ops.append(dist.P2POp(dist.irecv, a, r - 1))
    if r < w - 1:
        ops.append(dist.P2POp(dist.isend, a, r + 1))
    works = dist.batch_isend_irecv(ops)
    works.append(dist.broadcast(torch.full((8, 1), step, dtype=torch.int64, device=job.dev), src=w - 1, async_op=True))
    return works


def faulty(case):
    return not case.endswith("_clean") and not case.startswith("healthy_")


def worker(rank, outdir, case, port):
    world = opt(case, "world", 4)
    gloo = opt(case, "gloo", False)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ["NCCL_HOSTID"] = f"ppspec-host-{rank}"
    timeout = datetime.timedelta(seconds=120)
    if gloo:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timeout)
        dev = torch.device("cpu")
    else:
        torch.cuda.set_device(0)
        dev = torch.device("cuda", 0)
        dist.init_process_group("nccl", rank=rank, world_size=world, timeout=timeout, device_id=dev)
    job = Job(case, rank, world, dev)
    works, note = [], ""
    for step in range(opt(case, "steps", 6)):
        mine = pipeline_step(job, step) if world == 8 else four_rank_step(job, step)
        works += mine
        if case == "healthy_snapshot" and step == 100:
            dump(os.path.join(outdir, case), rank, gloo, stacks=False)
            note = f" (dumped at step 100 at {time.time_ns()} ns, while running)"
        if case == "healthy_inflight" and step == 50:
            big = torch.ones(256 * 1024 * 1024, device=dev)
            if rank == 3:
                time.sleep(3)
            works.append(dist.all_reduce(big, group=job.ep, async_op=True))
            dump(os.path.join(outdir, case), rank, gloo, stacks=False)
            note = f" (dumped at step 50 at {time.time_ns()} ns, with a 1 GiB all_reduce just posted)"
        # Gloo's wait blocks the host; a faulty Gloo job posts everything and waits for nothing.
        if not (gloo and faulty(case)):
            for w in mine:
                w.wait()
    time.sleep(10)  # whatever can complete has completed by now; a stuck job stays stuck
    done = sum(1 for w in works if w.is_completed())
    if not case.startswith("healthy_"):
        dump(os.path.join(outdir, case), rank, gloo)
    with open(os.path.join(outdir, case, f"status_{rank}.txt"), "w") as f:
        f.write(f"rank {rank}: {done}/{len(works)} works completed{note}\n")
    os._exit(0)


def record(outdir, case, port):
    os.makedirs(os.path.join(outdir, case), exist_ok=True)
    os.environ["TORCH_FR_BUFFER_SIZE"] = str(opt(case, "buffer", 2000))
    os.environ["TORCH_NCCL_TRACE_BUFFER_SIZE"] = os.environ["TORCH_FR_BUFFER_SIZE"]
    os.environ["TORCH_NCCL_ENABLE_TIMING"] = "1" if opt(case, "timing", False) else "0"
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    mp.spawn(worker, args=(outdir, case, port), nprocs=opt(case, "world", 4), join=True)
    lines = []
    for r in range(opt(case, "world", 4)):
        path = os.path.join(outdir, case, f"status_{r}.txt")
        lines.append(open(path).read() if os.path.exists(path) else f"rank {r}: no status\n")
        if os.path.exists(path):
            os.remove(path)
    with open(os.path.join(outdir, case, "completed.txt"), "w") as f:
        f.write(f"case {case}: {CASES[case][0]}\n" + "".join(lines))


def main():
    if sys.argv[1:] == ["--list"]:
        for name, (what, _) in CASES.items():
            print(f"{name}: {what}")
        return 0
    outdir = sys.argv[1]
    cases = sys.argv[2:] or list(CASES)
    if len(cases) == 1 and cases[0] in CASES:
        record(outdir, cases[0], 29600 + list(CASES).index(cases[0]))
        return 0
    failed = 0
    for case in cases:  # one process per case: a case that breaks leaves the others whole
        start = time.time()
        try:
            rc = subprocess.run([sys.executable, __file__, outdir, case], timeout=150).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        print(f"{case}: {'ok' if rc == 0 else f'FAILED ({rc})'} in {time.time() - start:.0f} s", flush=True)
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
