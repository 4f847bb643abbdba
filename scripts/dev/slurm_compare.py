#!/usr/bin/env python3
"""Whether the shards of a `ppspec fuzz` campaign, merged, are the same campaign run in one process,
case for case (scripts/dev/slurm_test.sh runs both; tests/fuzz_command_test.cc checks the same on two
shards in process).

  scripts/dev/slurm_compare.py SHARDS WHOLE_DIR WHOLE_STDOUT MERGE_STDOUT SHARD_DIR...

SHARD_DIR i is the --out folder of `--shard i/SHARDS`; WHOLE_DIR the --out folder of the campaign
run in one process with the same seed, space, faults and SHARDS times the cases; WHOLE_STDOUT what
that run printed, MERGE_STDOUT what `ppspec fuzz --merge SHARD_DIR...` printed.

Compared, and every difference printed:
  - summary.json: the case and failure counts and every engine-path counter, the shards' added up
    against the one process's; each shard ran only its own cases (index mod SHARDS);
  - each failing case, keyed by its index: verdict, kind, summary, the case before and after
    shrinking, the shrink's steps and runs, the shrunk size, the file's name and the command;
  - every file the campaign wrote for a failure (the shrunk found-*.toml and its .report.txt),
    byte for byte once the folder is taken out of the paths in it;
  - what `--merge` printed against what the one process printed, line for line, failures in case
    order.
Left out, as they differ by construction: wall-clock fields (seconds, found_after_s, shrunk_after_s,
cases/s), the folder part of each path to a found file (read as OUT/found-...), and the order of
the failures in the merged report (the merge sorts them by the time each shard found them).
Exit 0 and "equal: N cases, F failing" when nothing differs, else 1.
"""
import json
import os
import re
import sys

WALL_CLOCK = {"seconds", "found_after_s", "shrunk_after_s"}
# A path to a found file, whichever --out folder it sits in: OUT/found-....
FOLDER = re.compile(r"[^\s'\"]*/(found-seed)")


def unfolder(text):
    return FOLDER.sub(r"OUT/\1", text)


def load(d):
    with open(os.path.join(d, "summary.json")) as f:
        return json.load(f)


def norm_found(f):
    g = {k: v for k, v in f.items() if k not in WALL_CLOCK}
    g["file"] = unfolder(g["file"])
    g["command"] = unfolder(g["command"])
    return g


def failure_files(d):
    """found-*.toml and *.report.txt of a --out folder: name -> text with the folder taken out."""
    files = {}
    for name in sorted(os.listdir(d)):
        if name.startswith("found-"):
            with open(os.path.join(d, name), "rb") as f:
                files[name] = unfolder(f.read().decode())
    return files


def report_blocks(text):
    """A `ppspec fuzz` report: the two summary lines, and one 3-line block per failure, keyed by
    case; timings and folder names taken out."""
    lines = unfolder(text).rstrip("\n").split("\n")
    head = [re.sub(r"\(([0-9.]+) s, ([0-9.]+) cases/s\)", "(T s, R cases/s)", lines[0])] + lines[1:2]
    blocks = {}
    rest = lines[2:]
    if len(rest) % 3:
        raise SystemExit(f"unexpected report shape ({len(rest)} lines after the summary):\n{text}")
    for i in range(0, len(rest), 3):
        m = re.search(r" at case (\d+) after ", rest[i])
        if not m:
            raise SystemExit(f"unexpected failure line: {rest[i]}")
        first = re.sub(r"after [0-9.]+ s, shrunk after [0-9.]+ s", "after T s, shrunk after T s", rest[i])
        blocks[int(m.group(1))] = [first] + rest[i + 1:i + 3]
    return head, blocks


def main(argv):
    if len(argv) < 6:
        print(__doc__, file=sys.stderr)
        return 2
    shards = int(argv[1])
    whole_dir, whole_stdout, merge_stdout = argv[2], argv[3], argv[4]
    shard_dirs = argv[5:]
    diffs = []

    def differ(what, a, b):
        if a != b:
            diffs.append(f"{what}: merged {a!r} != one process {b!r}")

    def differ_sets(what, a, b):
        if set(a) != set(b):
            diffs.append(f"{what}: only in the merge {sorted(set(a) - set(b))}, only in the one process {sorted(set(b) - set(a))}")

    if len(shard_dirs) != shards:
        diffs.append(f"{len(shard_dirs)} shard folders for {shards} shards")
    whole = load(whole_dir)
    parts = [load(d) for d in shard_dirs]
    differ("seed", sorted({p["seed"] for p in parts}), [whole["seed"]])
    for i, p in enumerate(parts):
        differ(f"shard {i}: shard/shards", (p["shard"], p["shards"]), (i, shards))
        for f in p["found"]:
            if f["case"] % shards != i:
                diffs.append(f"shard {i} ran case {f['case']}, which is shard {f['case'] % shards}'s")
    differ("cases", sum(p["cases"] for p in parts), whole["cases"])
    differ("failures", sum(p["failures"] for p in parts), whole["failures"])
    for name in sorted(set(whole["paths"]) | {k for p in parts for k in p["paths"]}):
        differ(f"paths.{name}", sum(p["paths"].get(name, 0) for p in parts), whole["paths"].get(name, 0))

    merged_found = {}
    for p in parts:
        for f in p["found"]:
            if f["case"] in merged_found:
                diffs.append(f"case {f['case']} found by two shards")
            merged_found[f["case"]] = norm_found(f)
    whole_found = {f["case"]: norm_found(f) for f in whole["found"]}
    differ_sets("failing cases", merged_found, whole_found)
    for case in sorted(set(merged_found) & set(whole_found)):
        a, b = merged_found[case], whole_found[case]
        for k in sorted(set(a) | set(b)):
            differ(f"case {case}: {k}", a.get(k), b.get(k))

    merged_files = {}
    for d in shard_dirs:
        for name, data in failure_files(d).items():
            if name in merged_files:
                diffs.append(f"{name} written by two shards")
            merged_files[name] = data
    whole_files = failure_files(whole_dir)
    differ_sets("failure files", merged_files, whole_files)
    same_files = 0
    for name in sorted(set(merged_files) & set(whole_files)):
        if merged_files[name] != whole_files[name]:
            diffs.append(f"{name}: the shard's file differs from the one process's")
        else:
            same_files += 1

    with open(merge_stdout) as f:
        m_head, m_blocks = report_blocks(f.read())
    with open(whole_stdout) as f:
        w_head, w_blocks = report_blocks(f.read())
    differ("report summary lines", m_head, w_head)
    differ_sets("report failing cases", m_blocks, w_blocks)
    for case in sorted(set(m_blocks) & set(w_blocks)):
        differ(f"report, case {case}", m_blocks[case], w_blocks[case])

    print(f"compared: {whole['cases']} cases ({len(parts)} shards of {', '.join(str(p['cases']) for p in parts)}), "
          f"{len(whole['paths'])} engine-path counters, {len(whole_found)} failing cases field by field, "
          f"{same_files} of {len(whole_files)} failure files byte for byte (folder aside), the merged report line for line")
    if diffs:
        print(f"DIFFERENT ({len(diffs)}):")
        for d in diffs:
            print("  " + d)
        return 1
    print(f"equal: {whole['cases']} cases, {whole['failures']} failing")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
