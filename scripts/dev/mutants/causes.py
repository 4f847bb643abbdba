#!/usr/bin/env python3
"""Which cause a report gives for a mutant: does it name the mechanism that broke, or a neighbour?

    scripts/dev/mutants/causes.py [--build-dir DIR] [--seeds N] [--fuzz-seed S] [--fuzz-cases N] PATCH...

For each patch (scripts/dev/mutants/*.patch): apply it to the scratch copy of the tree that campaign.py
uses (DIR/src, default build/mutant/src), build ppspec, then
  * run every scenario of scenarios/serving/ with seeds 1..N (`ppspec run --json`), and
  * run a fuzz campaign (`ppspec fuzz --seed S --cases N --keep-going`): every failure shrunk,
and sort each failing run's first finding by the cause its report gives: the patch's header names
the words that say its mechanism (`cause:` lines, one pattern each), and every other cause is
counted by its first words. Prints one table per patch; `git apply -R` afterwards.
The scenario runs are the cases the causes were written against (in-sample); a fuzz seed nobody
looked at is held out.
"""
import argparse
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import campaign  # noqa: E402  (the scratch copy, the build and git apply)

ROOT = campaign.ROOT


def mechanism_patterns(patch):
    pats = []
    with open(patch) as fh:
        for line in fh:
            if not line.startswith("#"):
                break
            text = line[1:].strip()
            if text.startswith("cause:"):
                pats.append(re.compile(text[len("cause:"):].strip()))
    return pats


def first_words(text, n=9):
    return " ".join(text.split()[:n]) + " …"


def classify(summary, details, pats):
    """The mechanism's words anywhere in the finding; else its cause line (the first detail, which
    says why; the summary only says what) by its first words."""
    for p in pats:
        if p.search(" ".join([summary] + details)):
            return "names the mechanism"
    return "other: " + first_words(details[0] if details else summary, 14)


def scenario_runs(binary, src, seeds, pats):
    counts = collections.Counter()
    for path in sorted(glob.glob(os.path.join(src, "scenarios", "serving", "*.toml"))):
        r = subprocess.run([binary, "run", path, "--seeds", str(seeds), "--json"], capture_output=True, text=True, cwd=src)
        try:
            records = json.loads(r.stdout)
        except json.JSONDecodeError:
            counts["no JSON (exit %d)" % r.returncode] += 1
            continue
        for rec in records:
            f = rec.get("first")
            if rec.get("verdict") == "pass" or not f:
                counts["passes (the mutant does not reach it)"] += 1
                continue
            counts[f"{f['verdict']} / {f['kind']}: " + classify(f["summary"], f["details"], pats)] += 1
    return counts


def fuzz_runs(binary, seed, cases, pats):
    counts = collections.Counter()
    out = tempfile.mkdtemp(prefix="ppspec-causes-")
    try:
        r = subprocess.run([binary, "fuzz", "--seed", str(seed), "--cases", str(cases), "--keep-going", "--out", out, "--force"],
                           capture_output=True, text=True)
        if r.returncode not in (0, 1):
            counts[f"fuzz ended with exit {r.returncode}: " + first_words(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "", 20)] += 1
        for report in sorted(glob.glob(os.path.join(out, "*.report.txt"))):
            with open(report) as fh:
                text = fh.read()
            # The finding: its header line ("verdict (kind), engine step N: summary") and the lines under it.
            m = re.search(r"^(\S+) \(([^)]+)\)[^\n]*\n((?:  [^\n]*\n)*)", text, re.M)
            if not m:
                counts["no finding in " + os.path.basename(report)] += 1
                continue
            details = [line.strip() for line in m.group(3).splitlines() if line.strip()]
            counts[f"{m.group(1)} / {m.group(2)}: " + classify(m.group(0).splitlines()[0], details, pats)] += 1
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return counts


def table(title, counts):
    total = sum(counts.values())
    failing = total - counts.get("passes (the mutant does not reach it)", 0)
    lines = [f"{title}: {total} runs, {failing} failing"]
    for cause, n in counts.most_common():
        lines.append(f"  {n:4d}  {cause}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build", "mutant"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--fuzz-seed", type=int, default=7)
    ap.add_argument("--fuzz-cases", type=int, default=100)
    ap.add_argument("patches", nargs="+")
    a = ap.parse_args()
    src = os.path.join(a.build_dir, "src")
    bdir = os.path.join(a.build_dir, "build")
    files = campaign.tree_files()
    print(f"tree {campaign.tree_hash(files)}; serving scenarios with seeds 1..{a.seeds} (in-sample); fuzz seed "
          f"{a.fuzz_seed}, {a.fuzz_cases} cases (held out)", flush=True)
    status = 0
    for patch in a.patches:
        patch = os.path.abspath(patch)
        name = os.path.basename(patch)[:-6]
        pats = mechanism_patterns(patch)
        if not pats:
            print(f"{name}: no `cause:` line in its header", file=sys.stderr)
            return 2
        campaign.sync_scratch(files, src)
        r = campaign.git_apply(src, patch)
        if r.returncode != 0:
            print(f"{name}: does not apply: {r.stderr}", file=sys.stderr)
            return 2
        try:
            campaign.configure(src, bdir)
            ok, secs, log = campaign.build(bdir, a.jobs)
            if not ok:
                print(f"{name}: does not build:\n{log}", file=sys.stderr)
                return 2
            binary = os.path.join(bdir, "tools", "ppspec")
            print(f"\n## {name}  (mechanism: {' | '.join(p.pattern for p in pats)})", flush=True)
            print(table("serving scenarios (in-sample)", scenario_runs(binary, src, a.seeds, pats)), flush=True)
            print(table(f"fuzz seed {a.fuzz_seed} (held out)", fuzz_runs(binary, a.fuzz_seed, a.fuzz_cases, pats)), flush=True)
        finally:
            campaign.git_apply(src, patch, reverse=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
