#!/usr/bin/env python3
"""A callgrind profile's instructions by owner: `callgrind_annotate` output (self cost, one line per
function and source file) read, each line given to the ppspec area of its function, so that
standard library code inlined into a function counts as that function's. Out-of-line library code
(the allocator, libc's string functions, standard library functions not inlined, libm) has no owner
that self costs tell: it is its own area. Then what the simulator costs: at no cost, by how much the
work it is part of could speed up, at least (none of the library calls its) and at most (all of them).
Function names, not file paths, decide: the checkout's path never matters.
  scripts/dev/fuzz_areas.py ANNOTATE_OUTPUT"""
import collections
import re
import sys

AREAS = {
    "scheduling": "scheduling and switching (the world, its policies, Boost.Fiber)",
    "races": "race detection (the detector, vector clocks, item rings)",
    "sim": "the rest of the simulator (streams, devices, communication)",
    "kernels": "the model's kernels (their rows, run by launch_kernel)",
    "engine": "the engine",
    "verify": "monitors, oracles and findings",
    "core": "events, probes and buffers",
    "other": "the rest of ppspec (serving, fuzzer, loader, program, ...)",
    "library": "library calls of no known owner (allocator, libc, libm, out-of-line standard library)",
}
SCHEDULING = ("World", "WaitList", "SchedulerAlgorithm", "Fiber")
RACES = ("RaceDetector", "VectorClock", "ItemRing")


def area_of(function, binary):
    if function.startswith("boost::") or "libboost" in binary:
        return "scheduling"
    if "launch_kernel<" in function or function.startswith("ppspec::kernels::"):
        return "kernels"
    m = re.search(r"ppspec::(\w+)::(?:\(anonymous namespace\)::)?(\w+)", function)
    if m is None:
        return "library"
    namespace, name = m.group(1), m.group(2)
    if namespace == "sim":
        if name in SCHEDULING or name.endswith("Policy"):
            return "scheduling"
        return "races" if name in RACES else "sim"
    return namespace if namespace in AREAS else "other"


def main():
    total, share = 0, collections.Counter()
    line_re = re.compile(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+\S*?:(.*?)( \[[^\]]*\])?$")
    for line in open(sys.argv[1]):
        m = re.match(r"\s*([\d,]+) .*PROGRAM TOTALS", line)
        if m:
            total = int(m.group(1).replace(",", ""))
            continue
        m = line_re.match(line)
        if m:
            share[area_of(m.group(2), m.group(3) or "")] += int(m.group(1).replace(",", ""))
    if total == 0 or not share:
        sys.exit("scripts/dev/fuzz_areas.py: no profile lines in " + sys.argv[1])
    print(f"total: {total:,} instructions")
    for key, label in AREAS.items():
        print(f"{100 * share[key] / total:5.1f} %  {label}")
    simulator = share["scheduling"] + share["races"] + share["sim"]
    unknown = share["library"]
    print(f"the simulator and its race detector: {100 * simulator / total:.1f} %; at no cost, at least "
          f"{total / (total - simulator):.2f}x as fast (none of the library calls theirs), at most "
          f"{total / (total - simulator - unknown):.2f}x (all of them)")


if __name__ == "__main__":
    main()
