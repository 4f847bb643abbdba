#!/usr/bin/env python3
"""The serving table of docs/evidence/serving-two-h200/: each serving scenario on the simulator and on the GPUs
(`ppspec run --backend both`), and the sim = GPU comparison.

    scripts/dev/serving_table.py RESULTS > RESULTS/serving_table.md

RESULTS is the folder scripts/dev/gpu_check.sh wrote (serving/*.json, serving/*.refused).
"""
import glob
import json
import os
import sys


def gpus_of(root):
    """"N × NAME" from machine.txt (nvidia-smi -L, then name and driver), as scripts/dev/gpu_check.sh wrote it."""
    try:
        with open(os.path.join(root, "machine.txt")) as f:
            lines = f.read().splitlines()
    except OSError:
        return "GPUs"
    count = sum(1 for line in lines if line.startswith("GPU "))
    name = lines[count].split(",")[0].replace("NVIDIA ", "") if len(lines) > count and "," in lines[count] else "GPU"
    return f"{count} × {name}" if count else "GPUs"


def main():
    root = sys.argv[1]
    print(f"| serving scenario | simulator | {gpus_of(root)} | sim = GPU |")
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
        sim_cell = (f"`{sim['verdict']}`: {s['requests']} requests, {s['serving_steps']} serving steps, "
                    f"acceptance {s['acceptance_rate']:.2f}, {sim['stats']['sim_time_ns'] / 1e6:.1f} ms simulated")
        gpu_cell = f"`{gpu['verdict']}`: {gpu['stats']['ops_posted']} operations, {gpu['stats']['wall_ms'] / 1e3:.2f} s wall"
        notes = [n["summary"] for n in cmp.get("notes", [])]
        first = (cmp.get("first") or {}).get("summary", "")
        cmp_cell = (f"`{cmp['verdict']}`: " + (first or (notes[0] if notes else ""))).replace("|", "\\|")
        print(f"| `{name}` | {sim_cell} | {gpu_cell} | {cmp_cell} |")


if __name__ == "__main__":
    main()
