#!/usr/bin/env python3
"""Three tools on the same real jobs: ppspec's NCCL profiler plugin + `ppspec watch`, NCCL's RAS,
and PyTorch's Flight Recorder + `fr_trace` (and `ppspec check` of the same dumps).

    python3 scripts/dev/three_tools.py --ppspec build/gpu/tools/ppspec \
        --plugin build/gpu/watch/nccl_profiler/libppspec_nccl_profiler.so --gpus 2 --out DIR [--cases a,b]

Each case is one run of scripts/dev/torch_wire_job.py (the seed PR's wire pattern, clean or with one
fault) with all three listening at once, so they judge the same events:
* the plugin, loaded by NCCL (NCCL_PROFILER_PLUGIN), publishes to `ppspec watch --listen`, which
  runs without --abort (so that the job lives on to PyTorch's watchdog) and with --stall;
* RAS (NCCL_RAS_ENABLE=1, its client socket on NCCL_RAS_ADDR) is polled every second by
  scripts/dev/ras_poll.py, as `ncclras` would;
* ProcessGroupNCCL's Flight Recorder records (TORCH_NCCL_TRACE_BUFFER_SIZE), its watchdog fires
  after --watchdog seconds and dumps (TORCH_NCCL_DUMP_ON_TIMEOUT) into the case's fr/ folder;
  `python3 -m torch.distributed.flight_recorder.fr_trace` then reads the dumps, as does `ppspec check`.
Writes DIR/CASE/{job.log, watch.jsonl, ras.jsonl, fr/, fr_trace.txt, fr_check.json, result.json};
scripts/dev/three_tools_table.py turns DIR into the table.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ras_poll  # noqa: E402

CASES = {  # name: (fault, ranks)
    "clean": ("none", 2),
    "skipped_collective": ("skipped_collective", 2),
    "extra_broadcast": ("extra_broadcast", 2),
    "size_mismatch": ("size_mismatch", 2),
    "dtype_mismatch": ("dtype_mismatch", 2),
    "wrong_peer": ("wrong_peer", 3),
    "inverted_order": ("inverted_order", 2),
    "ungrouped_exchange": ("ungrouped_exchange", 2),
}


def job_env(args, case_dir, watch_port, ras_port):
    env = dict(os.environ)
    env.update({
        "NCCL_NVLS_ENABLE": "0",
        "NCCL_PROFILER_PLUGIN": os.path.abspath(args.plugin),
        "PPSPEC_WATCH": f"127.0.0.1:{watch_port}",
        "PPSPEC_TRACE_DIR": os.path.join(case_dir, "traces"),
        "NCCL_RAS_ENABLE": "1",
        "NCCL_RAS_ADDR": f"127.0.0.1:{ras_port}",
        "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": os.path.join(case_dir, "fr", "rank_"),
        "TORCH_FR_DUMP_TEMP_FILE": os.path.join(case_dir, "fr", "rank_"),
    })
    return env


def start_tools(args, case_dir, ranks, watch_port, ras_port):
    deadline = args.watchdog + args.grace
    watcher = subprocess.Popen(
        [args.ppspec, "watch", "--listen", f"127.0.0.1:{watch_port}", "--stall", str(args.stall), "--ranks",
         str(ranks), "--timeout", str(deadline + 30), "--out", os.path.join(case_dir, "watch"), "--json"],
        stdout=open(os.path.join(case_dir, "watch.jsonl"), "w"), stderr=open(os.path.join(case_dir, "watch.err"), "w"))
    ras = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "ras_poll.py"), "--addr", f"127.0.0.1:{ras_port}", "--every", "1",
         "--out", os.path.join(case_dir, "ras.jsonl"), "--until-file", os.path.join(case_dir, "job.ended"),
         "--limit", str(deadline + 30)])
    time.sleep(0.5)  # the watcher listens before the ranks connect
    return watcher, ras


def run_job(args, case_dir, fault, ranks, env):
    cmd = [sys.executable, os.path.join(HERE, "torch_wire_job.py"), "--world", str(ranks), "--gpus", str(args.gpus),
           "--fault", fault, "--watchdog", str(args.watchdog), "--store", os.path.join(case_dir, "store")]
    started = time.time_ns()
    with open(os.path.join(case_dir, "job.log"), "w") as log:
        job = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = job.wait(timeout=args.watchdog + args.grace)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            code = f"killed after {args.watchdog + args.grace} s"
    ended = time.time_ns()
    open(os.path.join(case_dir, "job.ended"), "w").close()
    return {"command": cmd, "exit": code, "started_ns": started, "ended_ns": ended}


def stop_watcher(watcher):
    time.sleep(2)  # the last lines of ranks that ended arrive
    if watcher.poll() is None:
        watcher.send_signal(signal.SIGINT)  # the end-of-job summary, as Ctrl-C gives it
    try:
        return watcher.wait(timeout=30)
    except subprocess.TimeoutExpired:
        watcher.kill()
        return "killed"


def flight_recorder(args, case_dir):
    fr = os.path.join(case_dir, "fr")
    dumps = sorted(f for f in os.listdir(fr) if f.startswith("rank_")) if os.path.isdir(fr) else []
    out = {"dumps": dumps, "dump_mtimes_ns": [os.stat(os.path.join(fr, f)).st_mtime_ns for f in dumps]}
    if not dumps:
        return out
    t0 = time.time_ns()
    r = subprocess.run([sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", "-p", "rank_", fr],
                       capture_output=True, text=True, timeout=300)
    out["fr_trace_s"] = (time.time_ns() - t0) / 1e9
    out["fr_trace_exit"] = r.returncode
    with open(os.path.join(case_dir, "fr_trace.txt"), "w") as f:
        f.write(r.stdout + r.stderr)
    c = subprocess.run([args.ppspec, "check", "--json", fr], capture_output=True, text=True, timeout=120)
    out["ppspec_check_exit"] = c.returncode
    with open(os.path.join(case_dir, "fr_check.json"), "w") as f:
        f.write(c.stdout + c.stderr)
    return out


def run_case(args, name, port_base):
    fault, ranks = CASES[name]
    case_dir = os.path.abspath(os.path.join(args.out, name))
    os.makedirs(os.path.join(case_dir, "fr"), exist_ok=True)
    watch_port, ras_port = port_base, port_base + 1
    watcher, ras = start_tools(args, case_dir, ranks, watch_port, ras_port)
    job = run_job(args, case_dir, fault, ranks, job_env(args, case_dir, watch_port, ras_port))
    job["watch_exit"] = stop_watcher(watcher)
    ras.wait(timeout=60)
    job["flight_recorder"] = flight_recorder(args, case_dir)
    polls = [json.loads(l) for l in open(os.path.join(case_dir, "ras.jsonl"))]
    job["ras"] = {"polls": len(polls), "answered": sum(1 for p in polls if "text" in p),
                  "finding": ras_poll.judge(polls)}
    job.update({"case": name, "fault": fault, "ranks": ranks, "gpus": args.gpus, "watchdog_s": args.watchdog,
                "stall_s": args.stall})
    with open(os.path.join(case_dir, "result.json"), "w") as f:
        json.dump(job, f, indent=1)
    print(f"{name}: job exit {job['exit']}, watch exit {job['watch_exit']}, RAS polls {len(polls)}, "
          f"FR dumps {len(job['flight_recorder']['dumps'])}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ppspec", required=True)
    p.add_argument("--plugin", required=True)
    p.add_argument("--gpus", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--watchdog", type=float, default=20.0, help="ProcessGroupNCCL's timeout, seconds")
    p.add_argument("--stall", type=float, default=5.0, help="ppspec watch --stall, seconds")
    p.add_argument("--grace", type=float, default=40.0, help="seconds past the watchdog before the job is killed")
    args = p.parse_args()
    for i, name in enumerate(args.cases.split(",")):
        if name not in CASES:
            p.error(f"unknown case {name!r}: expected one of {', '.join(CASES)}")
        run_case(args, name, 29800 + 10 * i)


if __name__ == "__main__":
    sys.exit(main())
