#!/usr/bin/env python3
"""Measures `ppspec fuzz` against the faults: for each fault of scenarios/regressions/, a
campaign that starts from no hand-written scenario (`ppspec fuzz --faults F`), once with schedules
of the random policy (scenarios/spaces/random.toml) and once with PCT (scenarios/spaces/pct.toml);
the time to the first failure and to the shrunk file, the shrunk file's size (requests, engine
steps, ranks); and the clean throughput on pp 2 shapes (scenarios/spaces/pp2.toml), one process.

  scripts/dev/fuzz_table.py [--ppspec build/default/tools/ppspec] [--time 60] [--out build/fuzz-table]
                      [--corpus scenarios/found]

Prints the markdown table. With --corpus, copies each fault's shrunk file (random column) there as
<fault>.toml: the regression corpus CI replays."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The one list of faults is engine/faults.h's table.
with open(os.path.join(ROOT, "engine/faults.h")) as _fh:
    FAULTS = re.findall(r'FaultSwitch\{"(\w+)"', _fh.read())


def campaign(ppspec, space, fault, seconds, out):
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([ppspec, "fuzz", os.path.join(ROOT, "scenarios/spaces", space + ".toml"), "--faults", fault,
                    "--time", str(seconds), "--out", out], capture_output=True, cwd=ROOT, check=False)
    with open(os.path.join(out, "summary.json")) as fh:
        s = json.load(fh)
    if not s["found"]:
        return {"cases": s["cases"], "seconds": s["seconds"]}
    f = s["found"][0]
    run = subprocess.run([ppspec, "run", "--json", f["file"]], capture_output=True, text=True, cwd=ROOT, check=False)
    steps = json.loads(run.stdout)[0].get("serving", {}).get("serving_steps", "?")
    return {"cases": s["cases"], "found": f, "steps": steps}


def cell(r):
    if "found" not in r:
        return f"not found in {r['seconds']:.0f} s ({r['cases']} cases)"
    f = r["found"]
    return (f"{f['found_after_s']:.2f} s / {f['shrunk_after_s']:.2f} s, case {f['case']}; "
            f"{f['requests']} req, {r['steps']} steps, {f['ranks']} ranks")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ppspec", default=os.path.join(ROOT, "build/default/tools/ppspec"))
    ap.add_argument("--time", type=int, default=60)
    ap.add_argument("--out", default=os.path.join(ROOT, "build/fuzz-table"))
    ap.add_argument("--corpus")
    a = ap.parse_args()
    rows = ["| fault | verdict / kind | random: first failure / shrunk file; shrunk size | PCT: the same |",
            "|---|---|---|---|"]
    for fault in FAULTS:
        res = {sp: campaign(a.ppspec, sp, fault, a.time, os.path.join(a.out, f"{fault}-{sp}")) for sp in ("random", "pct")}
        found = res["random"].get("found") or res["pct"].get("found")
        kind = f"`{found['verdict']}` / `{found['kind']}`" if found else "-"
        rows.append(f"| `{fault}` | {kind} | {cell(res['random'])} | {cell(res['pct'])} |")
        if a.corpus and "found" in res["random"]:
            os.makedirs(a.corpus, exist_ok=True)
            shutil.copy(os.path.join(ROOT, res["random"]["found"]["file"]), os.path.join(a.corpus, fault + ".toml"))
        print(rows[-1], file=sys.stderr, flush=True)
    out = os.path.join(a.out, "pp2-clean")
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([a.ppspec, "fuzz", os.path.join(ROOT, "scenarios/spaces/pp2.toml"), "--time", str(a.time), "--out", out],
                   capture_output=True, cwd=ROOT, check=False)
    with open(os.path.join(out, "summary.json")) as fh:
        s = json.load(fh)
    print("\n".join(rows))
    print(f"\nClean pp 2 campaign (scenarios/spaces/pp2.toml), one process: {s['cases']} cases in {s['seconds']:.0f} s = "
          f"{s['cases'] / s['seconds']:.0f} cases/s, {s['failures']} failures.")


if __name__ == "__main__":
    main()
