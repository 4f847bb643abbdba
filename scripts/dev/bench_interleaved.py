#!/usr/bin/env python3
"""Benchmarks two builds side by side on a noisy machine: the two benchmark binaries run in turn,
ROUNDS times each (one repetition per round), and each benchmark's median CPU time over the rounds
is compared. Alternating puts both sides under the same drift (frequency, steal, other load), which
one run of each, minutes apart, does not.
  scripts/dev/bench_interleaved.py BEFORE_BINARY AFTER_BINARY [--rounds N] [--filter REGEX] [--out DIR]"""
import argparse
import json
import os
import statistics
import subprocess


def run(binary, flt, out):
    cmd = [binary, f"--benchmark_out={out}", "--benchmark_out_format=json"]
    if flt:
        cmd.append(f"--benchmark_filter={flt}")
    subprocess.run(cmd, check=True, capture_output=True)
    with open(out) as fh:
        return {r["run_name"]: r["cpu_time"] for r in json.load(fh)["benchmarks"] if r.get("run_type") == "iteration"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--filter", default="")
    p.add_argument("--out", default="build/bench-interleaved")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    times = {"before": {}, "after": {}}
    for r in range(a.rounds):
        for side, binary in (("before", a.before), ("after", a.after)):
            for name, t in run(binary, a.filter, os.path.join(a.out, f"{side}_{r}.json")).items():
                times[side].setdefault(name, []).append(t)
    print(f"{a.rounds} rounds, before and after in turn; median CPU time (ms) over the rounds, and the range")
    print(f"{'benchmark':44} {'before':>20} {'after':>20} {'after/before':>12}")
    for name, b in times["before"].items():
        c = times["after"].get(name)
        if not c:
            continue
        mb, mc = statistics.median(b), statistics.median(c)
        print(f"{name:44} {mb:8.2f} [{min(b):6.1f},{max(b):6.1f}] {mc:8.2f} [{min(c):6.1f},{max(c):6.1f}] {mc / mb:12.3f}")


if __name__ == "__main__":
    main()
