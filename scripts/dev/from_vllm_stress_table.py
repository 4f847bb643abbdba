#!/usr/bin/env python3
"""Each engine fault switched on in the `ppspec from-vllm` scenario of six real deployments, run on
the simulator at the given seeds: caught (the verdict and finding kind) or passed, and in how many
seconds. Writes OUT/table.md and OUT/results.json, and the six scenarios under OUT/scenarios/.

    scripts/dev/from_vllm_stress_table.py [--ppspec build/default/tools/ppspec] [--seeds 1,2] OUT
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DEPLOYMENTS = [
    ("llama70b_eagle3_pp4_tp2",
     ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct", "-pp", "4", "-tp", "2", "--speculative-config",
      '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B", "num_speculative_tokens": 3}']),
    ("deepseek_v3_mtp_pp2_tp8",
     ["vllm", "serve", "deepseek-ai/DeepSeek-V3", "-pp", "2", "-tp", "8", "--trust-remote-code",
      "--speculative-config", '{"method": "deepseek_mtp", "num_speculative_tokens": 1}']),
    ("qwen3_ngram_pp2_tp4",
     ["vllm", "serve", "Qwen/Qwen3-32B", "-pp", "2", "-tp", "4", "--speculative-config",
      '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}']),
    ("qwen3_30b_a3b_dp2",
     ["vllm", "serve", "Qwen/Qwen3-30B-A3B", "--data-parallel-size", "2", "--enable-expert-parallel",
      "--speculative-config", '{"method": "eagle3", "model": "x/eagle3", "num_speculative_tokens": 3}']),
    ("llama405b_eagle3_pp8_tp8",
     ["vllm", "serve", "meta-llama/Llama-3.1-405B-Instruct", "-pp", "8", "-tp", "8", "--speculative-config",
      '{"method": "eagle3", "model": "x/eagle3", "num_speculative_tokens": 3}']),
    ("qwen3_next_mtp_pp2_tp4",
     ["vllm", "serve", "Qwen/Qwen3-Next-80B-A3B-Instruct", "-pp", "2", "-tp", "4", "--speculative-config",
      '{"method": "qwen3_next_mtp", "num_speculative_tokens": 2}']),
]


def fault_names():
    text = open(os.path.join(ROOT, "engine", "faults.h")).read()
    return re.findall(r'FaultSwitch\{"([a-z_0-9]+)"', text)


def run(ppspec, scenario, seed):
    t0 = time.monotonic()
    p = subprocess.run([ppspec, "run", scenario, "--seed", str(seed), "--json"], capture_output=True, text=True)
    seconds = time.monotonic() - t0
    if p.returncode not in (0, 1):
        sys.exit(f"ppspec run {scenario} --seed {seed}: exit {p.returncode}\n{p.stderr}")
    record = json.loads(p.stdout)[0]
    findings = record.get("findings") or []
    return {"verdict": record["verdict"], "kind": findings[0]["kind"] if findings else "",
            "engine_step": findings[0].get("engine_step") if findings else None, "seconds": round(seconds, 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ppspec", default=os.path.join(ROOT, "build", "default", "tools", "ppspec"))
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("out")
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    os.makedirs(os.path.join(a.out, "scenarios"), exist_ok=True)
    faults = fault_names()
    results = []
    for name, argv in DEPLOYMENTS:
        scenario = os.path.join(a.out, "scenarios", name + ".toml")
        made = subprocess.run([a.ppspec, "from-vllm", "-o", scenario, "--force", "--"] + argv,
                              capture_output=True, text=True)
        if made.returncode != 0:
            sys.exit(f"from-vllm {name}: exit {made.returncode}\n{made.stdout}{made.stderr}")
        text = open(scenario).read()
        for fault in [None] + faults:
            faulty = scenario if fault is None else os.path.join(a.out, "faulty.toml")
            if fault is not None:
                with open(faulty, "w") as f:
                    f.write(text + f"\n[faults]\n{fault} = true\n")
            for seed in seeds:
                r = run(a.ppspec, faulty, seed)
                r.update({"deployment": name, "fault": fault or "(none)", "seed": seed})
                results.append(r)
                print(f"{name} {r['fault']} seed {seed}: {r['verdict']} {r['kind']} {r['seconds']} s", flush=True)
        if os.path.exists(os.path.join(a.out, "faulty.toml")):
            os.remove(os.path.join(a.out, "faulty.toml"))
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    write_table(a.out, seeds, faults, results)


def write_table(out, seeds, faults, results):
    by = {(r["deployment"], r["fault"], r["seed"]): r for r in results}
    names = [n for n, _ in DEPLOYMENTS]
    lines = ["| fault | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for fault in ["(none)"] + faults:
        cells = []
        for n in names:
            rs = [by[(n, fault, s)] for s in seeds]
            cells.append(" / ".join(("pass" if r["verdict"] == "pass" else r["kind"]) + f" {r['seconds']} s"
                                    for r in rs))
        lines.append(f"| `{fault}` | " + " | ".join(cells) + " |")
    caught = {n: [sum(1 for f in faults if by[(n, f, s)]["verdict"] != "pass") for s in seeds] for n in names}
    lines.append("| caught of %d | " % len(faults) + " | ".join(" / ".join(map(str, caught[n])) for n in names) + " |")
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("Each cell: seed " + " / seed ".join(map(str, seeds)) +
                ": the first finding's kind, or pass; the run's wall seconds.\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
