#!/usr/bin/env python3
"""Compares two Google Benchmark JSON files (run with --benchmark_repetitions and aggregates):
each benchmark's median CPU time before and after, and the ratio after / before.
  scripts/dev/bench_compare.py BEFORE.json AFTER.json"""
import json
import sys


def medians(path):
    with open(path) as fh:
        runs = json.load(fh)["benchmarks"]
    return {r["run_name"]: (r["cpu_time"], r["time_unit"]) for r in runs if r.get("aggregate_name") == "median"}


def main():
    before, after = medians(sys.argv[1]), medians(sys.argv[2])
    print(f"{'benchmark':44} {'before':>14} {'after':>14} {'after/before':>12}")
    for name, (t0, unit) in before.items():
        if name not in after:
            print(f"{name:44} {t0:>11.3f} {unit} {'(gone)':>14}")
            continue
        t1, unit1 = after[name]
        assert unit1 == unit, name
        print(f"{name:44} {t0:>11.3f} {unit} {t1:>11.3f} {unit} {t1 / t0:>12.3f}")
    for name in after.keys() - before.keys():
        print(f"{name:44} {'(new)':>14} {after[name][0]:>11.3f} {after[name][1]}")


if __name__ == "__main__":
    main()
