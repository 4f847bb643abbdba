#!/usr/bin/env python3
"""Engine performance on GPUs from what scripts/dev/gpu_check.sh recorded, beside the simulator's figures.

    scripts/dev/gpu_perf.py RESULTS > docs/evidence/serving-two-h200/perf.md

For each perf scenario NAME (scenarios/perf/NAME.toml) it reads RESULTS/traces/perf-NAME.jsonl (the GPU
run's trace), RESULTS/profile-NAME.jsonl (PPSPEC_GPU_PROFILE: CUDA-event intervals per rank and
engine step), RESULTS/perf-NAME.json (`ppspec run --backend both --json`: the simulator's run, the
GPUs' run, their comparison) and RESULTS/latency.txt.
Serving steps only (warmup excluded). Latency of a step: from the engine core scheduling it to the
last stage's sampled tokens of it reaching the host (a host function on its stream).
"""
import glob
import gzip
import json
import os
import re
import statistics
import sys


def pct(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def read_trace(path):
    scheduled, sampled = {}, {}
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            ev = e.get("ev")
            if ev == "batch_scheduled" and e.get("text") != "warmup" and e.get("ints"):
                scheduled[e["step"]] = e["t"]
            elif ev == "tokens_sampled":
                sampled[e["step"]] = max(sampled.get(e["step"], 0), e["t"])
    return scheduled, sampled


def read_profile(path):
    rows = {}
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"  # as committed under docs/evidence/
    if not os.path.exists(path):
        return rows
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            r = json.loads(line)
            rows[(r["rank"], r["step"])] = r
    return rows


def rtt_us(results):
    try:
        text = open(os.path.join(results, "latency.txt")).read()
        return float(re.search(r"median ([0-9.]+) us", text).group(1))
    except (OSError, AttributeError):
        return float("nan")


def summarize(results, name, rtt):
    trace = glob.glob(os.path.join(results, "traces", f"perf-{name}*.jsonl"))
    if not trace:
        return None
    scheduled, sampled = read_trace(trace[0])
    steps = sorted(s for s in scheduled if s in sampled)
    latency = [(sampled[s] - scheduled[s]) / 1e3 for s in steps]
    span_s = (max(sampled[s] for s in steps) - min(scheduled[s] for s in steps)) / 1e9
    prof = read_profile(os.path.join(results, f"profile-{name}.jsonl"))
    ranks = sorted({r for r, _ in prof})
    per_rank = {}
    for r in ranks:
        rows = [prof[(r, s)] for s in steps if (r, s) in prof]
        per_rank[r] = {k: statistics.median([x[k] for x in rows]) if rows else float("nan")
                       for k in ("kernels_us", "graphs_us", "communication_us", "copies_us", "host_us")}
    # The step's own work on the critical path: every stage's compute, and one activation transfer
    # per stage boundary at the measured NCCL one-way latency (half the round trip).
    compute = sum(v["kernels_us"] + v["graphs_us"] for v in per_rank.values())
    comm = (len(ranks) - 1) * rtt / 2
    graph_steps = [s for s in steps if any(prof.get((r, s), {}).get("graphs_us", 0) > 0 for r in ranks)]
    graph_latency = [(sampled[s] - scheduled[s]) / 1e3 for s in graph_steps]
    sim = None
    both_path = os.path.join(results, f"perf-{name}.json")
    if os.path.exists(both_path):
        records = json.load(open(both_path))
        rec = records[0]
        sim = {"steps": rec["serving"]["serving_steps"], "sim_ms": rec["stats"]["sim_time_ns"] / 1e6,
               "agree": records[2]["verdict"] == "pass" and any(
                   n["summary"].startswith("identical") for n in records[2].get("notes", []))}
    return {"name": name, "steps": len(steps), "steps_per_s": len(steps) / span_s, "p50": pct(latency, 50),
            "p90": pct(latency, 90), "graph_steps": len(graph_steps), "graph_p50": pct(graph_latency, 50),
            "per_rank": per_rank, "compute": compute, "comm": comm, "sim": sim}


def main():
    results = sys.argv[1]
    rtt = rtt_us(results)
    # The perf scenarios gpu_check.sh ran: scenarios/perf (2 GPUs) unless PERF names another folder.
    folder = os.environ.get("PERF", "scenarios/perf")
    names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(folder, "*.toml")))
    rows = [s for s in (summarize(results, n, rtt) for n in names) if s]
    print(f"NCCL send/recv round trip between GPU 0 and GPU 1 (8 bytes, median): {rtt:.1f} us\n")
    print("| run | serving steps | steps/s | step latency p50 / p90 (us) | graph-replayed steps, p50 (us) | "
          "per step p50, each rank: kernels + graphs / NCCL / copies / host (us) | simulator: steps, simulated steps/s |")
    print("|---|---|---|---|---|---|---|")
    for s in rows:
        ranks = "; ".join(
            f"rank{r}: {v['kernels_us']:.0f} + {v['graphs_us']:.0f} / {v['communication_us']:.0f} / {v['copies_us']:.0f} / {v['host_us']:.0f}"
            for r, v in sorted(s["per_rank"].items()))
        sim = (f"{s['sim']['steps']}, {s['sim']['steps'] / (s['sim']['sim_ms'] / 1e3):.0f}"
               f"{' (sim = GPU)' if s['sim']['agree'] else ' (sim ≠ GPU!)'}") if s["sim"] else "—"
        graph = f"{s['graph_steps']}, {s['graph_p50']:.0f}" if s["graph_steps"] else "none"
        print(f"| {s['name']} | {s['steps']} | {s['steps_per_s']:.0f} | {s['p50']:.0f} / {s['p90']:.0f} | {graph} | {ranks} | {sim} |")
    print()
    for s in rows:
        if not s["graph_steps"]:
            continue
        bound = 2 * (s["compute"] + s["comm"])
        verdict = "meets" if s["graph_p50"] <= bound else "misses"
        print(f"- {s['name']}: a graph-replayed step takes {s['graph_p50']:.0f} us (p50) against 2 × (its kernels "
              f"{s['compute']:.0f} us + one activation transfer {s['comm']:.0f} us) = {bound:.0f} us: it {verdict} the target.")


if __name__ == "__main__":
    main()
