#!/usr/bin/env python3
"""Turns what scripts/dev/nccl_profiler_gpu.sh wrote on a GPU machine (summary.txt, results.tar.gz) into
docs/evidence/nccl-profiler-h200/: gpu.md (the tables the README quotes), summary.txt as it came, and a
few of the traces and watcher outputs themselves.

    scripts/dev/nccl_profiler_evidence.py RESULTS_DIR [OUT_DIR]
"""
import json
import os
import re
import shutil
import statistics
import sys
import tarfile
import tempfile

WIRE_CASES = ["clean2", "clean3", "extra_broadcast", "skipped_collective", "size_mismatch", "dtype_mismatch", "inverted_order",
              "ungrouped_exchange", "wrong_peer", "calls_clean2", "calls_extra_broadcast"]


def json_objects(path):
    """Every JSON object of a file, whether one a line or pretty-printed one after another."""
    if not os.path.exists(path):
        return []
    text, out, i = open(path).read(), [], 0
    dec = json.JSONDecoder()
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        obj, i = dec.raw_decode(text, i)
        out.append(obj)


def first_line(path):
    return open(path).readline().strip() if os.path.exists(path) else "(none)"


def verdict_of(check_line):
    m = re.search(r"verdict (\S+)", check_line)
    return m.group(1) if m else check_line[:120]


def fault_start_ns(case_dir):
    """When the faulty step began, the earliest rank's clock (CLOCK_REALTIME, as the plugin's traces)."""
    starts = []
    for name in sorted(os.listdir(case_dir)):
        if name.startswith("rank") and name.endswith(".log"):
            for line in open(os.path.join(case_dir, name)):
                m = re.search(r"step 3 begins at (\d+) ns", line) or re.search(r"fault \S+ at (\d+) ns", line)
                if m:
                    starts.append(int(m.group(1)))
    return min(starts) if starts else None


def cell(s):
    return str(s).replace("|", "/").replace("\n", " ")[:220]


def wire_row(work, case, summary):
    d = os.path.join(work, case)
    m = re.search(rf"^case {case} ranks=(\d+) fault=(\S+) job_exit=([\d ]+) job_s=\S+ watch_exit=(\d+) check_exit=(\d+)", summary, re.M)
    ranks, fault, job, watch_exit, check_exit = m.groups() if m else ("?", "?", "?", "?", "?")
    objs = json_objects(os.path.join(d, "watch.json"))
    reports = [o for o in objs if "report" in o]
    final = next((o["summary"] for o in objs if "summary" in o), None)
    start = fault_start_ns(d) if fault != "none" else None
    first = reports[0] if reports else None
    delay = f"{(first['unix_ns'] - start) / 1e9:.2f} s" if first and start else "-"
    culprit = first["finding"].get("culprit") if first else None
    named = f"rank {culprit['rank']} ({culprit['what']})" if culprit and culprit.get("rank", -1) >= 0 else "-"
    said = f"{first['report']}: {first['finding']['kind']}" if first else "nothing"
    return (f"| {case} | {ranks} | {fault} | {job.strip()} | {said} | {named} | {delay} | "
            f"{final['verdict'] if final else '-'} | {verdict_of(first_line(os.path.join(d, 'check.txt')))} | "
            f"{cell(first['finding']['summary']) if first else '-'} |")


def recorded_rows(work, cases):
    """Per rank of each clean job, from the plugin's own trace: what it recorded and what completed."""
    rows = ["| job | rank | communicators | posted | of them graph replays | captured calls | started | completed |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for case in cases:
        d = os.path.join(work, case, "traces")
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            lines = [json.loads(l) for l in open(os.path.join(d, name)) if l.strip()]
            ev = [l.get("ev") for l in lines]
            replays = sum(1 for l in lines if l.get("ev") == "op_posted" and "replay_of" in l)
            rank = lines[0].get("rank")
            rows.append(f"| {case} | {rank} | {ev.count('comm_init')} | {ev.count('op_posted')} | {replays} | {ev.count('op_captured')} | "
                        f"{ev.count('op_started')} | {ev.count('op_completed')} |")
    return "\n".join(rows)


def cost_table(summary):
    runs = {}
    for m in re.finditer(r"cost mode=(\w+) run=\d+: .*?: ([\d.]+) us per operation; cpu us per operation: thread ([\d.]+) process ([\d.]+)",
                         summary):
        runs.setdefault(m.group(1), []).append(tuple(float(x) for x in m.group(2, 3, 4)))
    rows = ["| mode | rounds | wall µs per group, median (min-max) | process CPU µs per group, median | added wall per NCCL operation vs none "
            "(median) | added process CPU per NCCL operation |", "|---|---:|---|---:|---:|---:|"]
    base = runs.get("none")
    for mode in ("none", "all", "calls"):
        if mode not in runs:
            continue
        wall = [r[0] for r in runs[mode]]
        proc = [r[2] for r in runs[mode]]
        added = (statistics.median(wall) - statistics.median([r[0] for r in base])) / 2 if base else 0
        added_cpu = (statistics.median(proc) - statistics.median([r[2] for r in base])) / 2 if base else 0
        rows.append(f"| {mode} | {len(wall)} | {statistics.median(wall):.2f} ({min(wall):.2f}-{max(wall):.2f}) | {statistics.median(proc):.2f} | "
                    f"{added:+.2f} µs | {added_cpu:+.2f} µs |")
    return "\n".join(rows)


def copy_samples(work, out):
    samples = os.path.join(out, "samples")
    shutil.rmtree(samples, ignore_errors=True)
    for case, what in (("clean2", "traces"), ("extra_broadcast", "traces"), ("torch2", "traces"), ("backend-single_rank_self_exchange_graph", "traces")):
        src = os.path.join(work, case, what)
        if os.path.isdir(src):
            for i, name in enumerate(sorted(os.listdir(src))):
                os.makedirs(os.path.join(samples, case), exist_ok=True)
                shutil.copy(os.path.join(src, name), os.path.join(samples, case, f"rank{i}.jsonl"))
    for case in ("extra_broadcast", "wrong_peer", "torch-fault"):
        src = os.path.join(work, case, "watch.json")
        if os.path.exists(src):
            os.makedirs(os.path.join(samples, case), exist_ok=True)
            with open(os.path.join(samples, case, "watch.jsonl"), "w") as f:
                for o in json_objects(src):
                    f.write(json.dumps(o) + "\n")


def main():
    results = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else "docs/evidence/nccl-profiler-h200"
    os.makedirs(out, exist_ok=True)
    summary = open(os.path.join(results, "summary.txt")).read()
    shutil.copy(os.path.join(results, "summary.txt"), os.path.join(out, "summary.txt"))
    work = tempfile.mkdtemp()
    with tarfile.open(os.path.join(results, "results.tar.gz")) as t:
        t.extractall(work)
    md = ["# The NCCL profiler plugin and `ppspec watch` on one H200", "",
          "Written by `scripts/dev/nccl_profiler_evidence.py` from what `scripts/dev/nccl_profiler_gpu.sh` wrote on a one-GPU "
          "machine (`summary.txt` beside this file is its own account). Several ranks share the GPU: each process has its own "
          "`NCCL_HOSTID`, so NCCL connects them through its socket transport, a real multi-rank job.", "",
          "## Machine, loading, an interface NCCL does not know", "", "```"]
    md += [l for l in summary.splitlines() if l.startswith("GPU ") or (l.startswith("torch ") and "nccl" in l) or "NCCL INFO" in l
           or l.startswith("future ") or l.startswith("one-rank job")]
    md += ["```", "", "## ppspec's real backend, one rank, plugin loaded", "", "```"]
    md += [l for l in summary.splitlines() if l.startswith("backend ") or l.startswith("  check exit")][:4]
    md += ["```", "", "## The wire job (the seed PR's pattern), watched live with `--abort`", "",
           "| case | ranks | fault at step 3 | job exit codes | the watcher's first report | culprit | from the faulty step to the report | "
           "watcher's verdict | `ppspec check` of the traces | what the report said |",
           "|---|---:|---|---|---|---|---:|---|---|---|"]
    md += [wire_row(work, c, summary) for c in WIRE_CASES if os.path.isdir(os.path.join(work, c))]
    md += ["", "What the plugin recorded of the clean jobs (every operation posted completed; a one-rank job's sends to itself are "
           "never started or completed in a trace: NCCL tells no kernel event of them, and the readers take them as completed):", "",
           recorded_rows(work, ["clean2", "clean3", "torch2", "backend-single_rank_self_exchange_graph"])]
    md += ["", "## PyTorch (ProcessGroupNCCL)", "", "```"]
    md += [l for l in summary.splitlines() if l.startswith("torch ") or (l.startswith("  check exit") and "torch" in l) or "watch exit" in l]
    md += ["```", ""]
    tf = os.path.join(work, "torch-fault")
    if os.path.isdir(tf):
        reports = [o for o in json_objects(os.path.join(tf, "watch.json")) if "report" in o]
        start = fault_start_ns(tf) or next((int(m.group(1)) for m in re.finditer(r"fault extra_broadcast at (\d+) ns", open(os.path.join(tf, "log.txt")).read())), None)
        if reports and start:
            md += [f"extra broadcast in PyTorch: the watcher reported `{reports[0]['finding']['kind']}` "
                   f"{(reports[0]['unix_ns'] - start) / 1e9:.2f} s after the faulty call: {cell(reports[0]['finding']['summary'])}", ""]
    md += ["## Cost", "", "One rank, a send to itself and its receive in one group, 20,000 times per process, modes alternating "
           "(NCCL instruments sends and receives even on one rank; a one-rank all-reduce it copies locally and never tells a "
           "profiler of). A group is two NCCL operations.", "", cost_table(summary), "", "```"]
    md += [l for l in summary.splitlines() if l.startswith("bench ranks=2") or l.startswith("torchbench")]
    md += ["```", ""]
    open(os.path.join(out, "gpu.md"), "w").write("\n".join(md) + "\n")
    copy_samples(work, out)
    shutil.rmtree(work)
    print(f"wrote {out}/gpu.md")


if __name__ == "__main__":
    main()
