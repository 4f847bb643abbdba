#!/usr/bin/env python3
"""The serving table of docs/evidence/2xH200/: each serving scenario on the simulator and on the GPUs
(`ppspec run --backend both`), and the sim = GPU comparison.

    scripts/serving_table.py RESULTS > RESULTS/serving_table.md

RESULTS is the folder scripts/gpu_check.sh wrote (serving/*.json, serving/*.refused).
"""
import glob
import json
import os
import sys


def main():
    root = sys.argv[1]
    print("| serving scenario | simulator | 2 × H200 | sim = GPU |")
    print("|---|---|---|---|")
    for path in sorted(glob.glob(os.path.join(root, "serving", "*.json")) + glob.glob(os.path.join(root, "serving", "*.refused"))):
        name = os.path.basename(path).rsplit(".", 1)[0]
        if path.endswith(".refused"):
            text = " ".join(open(path).read().split()).replace("|", "\\|")
            print(f"| `{name}` | — | refused, exit 2: {text} | — |")
            continue
        try:
            sim, gpu, cmp = json.load(open(path))
        except (ValueError, TypeError):
            print(f"| `{name}` | — | no result (see {name}.stderr) | — |")
            continue
        s = sim["serving"]
        sim_cell = (f"`{sim['verdict']}`: {s['requests']} requests, {s['engine_steps']} steps, "
                    f"acceptance {s['acceptance_rate']:.2f}, {sim['stats']['sim_time_ns'] / 1e6:.1f} ms simulated")
        gpu_cell = f"`{gpu['verdict']}`: {gpu['stats']['ops_posted']} operations, {gpu['stats']['wall_ms'] / 1e3:.2f} s wall"
        notes = [n["summary"] for n in cmp.get("notes", [])]
        first = (cmp.get("first") or {}).get("summary", "")
        cmp_cell = (f"`{cmp['verdict']}`: " + (first or (notes[0] if notes else ""))).replace("|", "\\|")
        print(f"| `{name}` | {sim_cell} | {gpu_cell} | {cmp_cell} |")


if __name__ == "__main__":
    main()
