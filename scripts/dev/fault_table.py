#!/usr/bin/env python3
"""The fault table of docs/evidence/serving-two-h200/ (or a 4-GPU run's folder): per fault of the seed PR, what the simulator
said next to what the H200s did, and each fault-off twin on both backends.

    scripts/dev/fault_table.py RESULTS [FAULTS] > docs/evidence/serving-two-h200/fault_table.md

FAULTS is the folder of regressions gpu_check.sh ran (scenarios/regressions/pp2_tp1 on 2 GPUs, the
default; scenarios/regressions, pp 2 tp 2, on 4): the shape and the GPU count of the heading come
from its first scenario.

RESULTS is the folder scripts/dev/gpu_check.sh wrote (with runs.tgz unpacked: faults/*.json). Every cell
comes from those files; nothing here is typed by hand.
"""
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def ms(ns):
    return f"{ns / 1e6:.3f} ms" if ns < 1e9 else f"{ns / 1e9:.2f} s"


def short(text, n=150):
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= n else text[: n - 1] + "…"


def first(record):
    return record.get("first") or {}


def sim_cell(rec):
    f = first(rec)
    if not f:
        return f"`{rec['verdict']}`"
    return f"`{rec['verdict']}` at {ms(f['time_ns'])} simulated ({rec['stats']['wall_ms']:.1f} ms wall): {short(f['summary'])}"


def hardware_kind(rec):
    verdicts = [f["verdict"] for f in rec.get("findings", [])]
    kinds = []
    if "hang" in verdicts:
        kinds.append("hang (watchdog dump)")
    if "fifo-misalignment" in verdicts:
        kinds.append("checker finding over the GPU trace")
    if any(v in verdicts for v in ("stale-draft", "padding-violation", "embedding-violation")):
        kinds.append("monitor finding (online, from device memory)")
    if "output-divergence" in verdicts:
        kinds.append("wrong tokens")
    return ", ".join(kinds) or "nothing visible"


def gpu_cell(rec):
    if rec is None:
        return "no result"
    f = first(rec)
    head = f"`{rec['verdict']}` — {hardware_kind(rec)}"
    if not f:
        return head + f" (run {rec['stats']['wall_ms'] / 1e3:.2f} s)"
    cell = f"{head}; first at {ms(f['time_ns'])} of the run: {short(f['summary'])}"
    hang = next((x for x in rec.get("findings", []) if x["verdict"] == "hang"), None)
    if hang and hang is not f:
        stuck = [d for d in hang.get("details", []) if "inside" in d and "host" in d.split()[1]]
        if stuck:
            cell += f"; then hang, dump: {short('; '.join(stuck), 200)}"
    return cell


def both_cell(records):
    if not records or len(records) != 3:
        return "—"
    sim, gpu, cmp = records
    notes = [n["summary"] for n in cmp.get("notes", [])]
    agreement = cmp["verdict"] if cmp["verdict"] != "pass" else ("sim = GPU" if any(n.startswith("identical") for n in notes) else "pass")
    detail = short(notes[0], 120) if notes else short(first(cmp).get("summary", ""), 120)
    return f"sim `{sim['verdict']}`, GPU `{gpu['verdict']}`; {agreement}: {detail}"


def shape(folder):
    """pp and tp of the first regression in `folder` (every regression of a folder has one shape)."""
    import glob
    import re
    for path in sorted(glob.glob(os.path.join(folder, "*.toml"))):
        text = open(path).read()
        pp = re.search(r"^pp\s*=\s*(\d+)", text, re.M)
        tp = re.search(r"^tp\s*=\s*(\d+)", text, re.M)
        return int(pp.group(1)) if pp else 1, int(tp.group(1)) if tp else 1
    return 2, 1


def main():
    root = sys.argv[1]
    faults = os.path.join(root, "faults")
    names = sorted({f.split(".")[0] for f in os.listdir(faults) if f.endswith(".sim.json")})
    folder = sys.argv[2] if len(sys.argv) > 2 else "scenarios/regressions/pp2_tp1"
    pp, tp = shape(folder)
    print(f"| fault (pp {pp} tp {tp}) | simulator, seed 1 | {pp * tp} × H200 | GPU trace checked offline | fault-off twin on both |")
    print("|---|---|---|---|---|")
    for name in names:
        if name.endswith("_off"):
            continue
        sim = (load(os.path.join(faults, f"{name}.sim.json")) or [None])[0]
        gpu = (load(os.path.join(faults, f"{name}.gpu.json")) or [None])[0]
        check = (load(os.path.join(faults, f"{name}.check.json")) or [None])[0]
        twin = load(os.path.join(faults, f"{name}_off.both.json"))
        check_cell = f"`{check['verdict']}`" if check else "—"
        print(f"| `{name}` | {sim_cell(sim) if sim else '—'} | {gpu_cell(gpu)} | {check_cell} | {both_cell(twin)} |")


if __name__ == "__main__":
    main()
