#!/usr/bin/env python3
"""Where a build's compile time goes, from ninja's own log (BUILD_DIR/.ninja_log): the seconds each
job took, summed by kind (the CUDA kernels, the tests' translation units, each library, links), for a
build made from scratch in that folder (ninja logs the last run of each output).

    scripts/dev/build_profile.py BUILD_DIR [BUILD_DIR...]

Job seconds, not wall time: on 2 cores two jobs run at once, so a build's wall time is about half
the sum when both cores stay busy (scripts/dev/ci_time.sh gives the wall time of each phase)."""
import collections
import sys


def kind_of(output: str) -> str:
    if output.endswith(".cu.o") or "kernels_cuda" in output:
        return "CUDA kernels (nvcc, one module per engine kernel)"
    if output.endswith(".gch"):
        return "precompiled headers"
    if output.startswith(("tests/", "property_tests/")):
        return "the tests' own translation units"
    if output.startswith("bench/"):
        return "benchmarks"
    if output.startswith("libfuzzer/"):
        return "fuzz targets as corpus replayers"
    if output.startswith(("real_backend/", "runs/gpu_jobs/")):
        return "the real backend and GPU jobs (host code)"
    if not output.endswith(".o"):
        return "links and generated files"
    return "library " + output.split("/")[0]


for build in sys.argv[1:]:
    last = {}
    for line in open(f"{build}/.ninja_log"):
        if line.startswith("#"):
            continue
        start, end, _, output, _ = line.rstrip("\n").split("\t")
        last[output] = (int(start), int(end))
    by_kind = collections.Counter()
    for output, (start, end) in last.items():
        by_kind[kind_of(output)] += (end - start) / 1000
    total = sum(by_kind.values())
    span = (max(e for _, e in last.values()) - min(s for s, _ in last.values())) / 1000
    print(f"{build}: {len(last)} jobs, {total:.0f} job seconds over {span:.0f} s from the first start to the last end")
    for kind, seconds in by_kind.most_common():
        print(f"  {seconds:6.1f} s  {100 * seconds / total:4.1f}%  {kind}")
