#!/usr/bin/env python3
"""Each engine fault switched on in the `ppspec from-vllm` scenario of six real deployments, and of the
first under the priority scheduling policy (where vLLM #28558 lives): whether
the deployment can reach it at all (`ppspec run --json`'s unreachable_faults, and why not), whether
the stress scenario catches it at each seed, and, where it does not, whether a `ppspec fuzz
--around` campaign of the scenario does within --fuzz-time seconds (the case that caught it, and
when). Seeds pair up: stress seed S with fuzz seed S. Writes OUT/table.md and OUT/results.json, and
the seven scenarios under OUT/scenarios/.

    scripts/dev/from_vllm_stress_table.py [--ppspec build/default/tools/ppspec] [--seeds 1,2] [--fuzz-time 60] OUT
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DEPLOYMENTS = [
    ("llama70b_eagle3_pp4_tp2",
     ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct", "-pp", "4", "-tp", "2", "--speculative-config",
      '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B", "num_speculative_tokens": 3}']),
    ("llama70b_eagle3_pp4_tp2_priority",
     ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct", "-pp", "4", "-tp", "2", "--scheduling-policy", "priority",
      "--speculative-config",
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
            "engine_step": findings[0].get("engine_step") if findings else None, "seconds": round(seconds, 2),
            "unreachable": record.get("unreachable_faults", {})}


def fuzz(ppspec, scenario, fault, seed, seconds, out):
    """A campaign around the fault-free scenario with the fault switched on: what it found, and when."""
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([ppspec, "fuzz", "--around", scenario, "--faults", fault, "--seed", str(seed),
                        "--time", str(seconds), "--out", out], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"ppspec fuzz --around {scenario} --faults {fault}: exit {p.returncode}\n{p.stderr}")
    summary = json.load(open(os.path.join(out, "summary.json")))
    shutil.rmtree(out, ignore_errors=True)
    found = summary.get("found") or []
    if not found:
        return {"caught": False, "cases": summary["cases"], "seconds": round(summary["seconds"], 1)}
    f = found[0]
    return {"caught": True, "kind": f["kind"], "case": f["case"], "found_after_s": round(f["found_after_s"], 1),
            "cases": summary["cases"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ppspec", default=os.path.join(ROOT, "build", "default", "tools", "ppspec"))
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--fuzz-time", type=int, default=60)
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
                r["unreachable"] = r["unreachable"].get(fault, "") if fault else ""
                r.update({"deployment": name, "fault": fault or "(none)", "seed": seed})
                if fault and r["verdict"] == "pass" and not r["unreachable"]:
                    r["fuzz"] = fuzz(a.ppspec, scenario, fault, seed, a.fuzz_time, os.path.join(a.out, "fuzz-out"))
                results.append(r)
                print(f"{name} {r['fault']} seed {seed}: {r['verdict']} {r['kind']} {r['seconds']} s"
                      f"{' unreachable' if r['unreachable'] else ''} {r.get('fuzz', '')}", flush=True)
        if os.path.exists(os.path.join(a.out, "faulty.toml")):
            os.remove(os.path.join(a.out, "faulty.toml"))
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    write_table(a.out, seeds, faults, results)


def cell(r):
    if r["fault"] != "(none)" and r["unreachable"]:
        return "—"
    if r["verdict"] != "pass":
        return f"stress: {r['kind']} {r['seconds']} s"
    if "fuzz" not in r:
        return f"pass {r['seconds']} s"
    f = r["fuzz"]
    if f["caught"]:
        return f"fuzz: {f['kind']} case {f['case']} {f['found_after_s']} s"
    return f"**missed** ({f['cases']} cases, {f['seconds']} s)"


def write_table(out, seeds, faults, results):
    by = {(r["deployment"], r["fault"], r["seed"]): r for r in results}
    names = [n for n, _ in DEPLOYMENTS]
    lines = ["| fault | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for fault in ["(none)"] + faults:
        lines.append(f"| `{fault}` | " + " | ".join(" / ".join(cell(by[(n, fault, s)]) for s in seeds)
                                                  for n in names) + " |")
    def counts(n, s):
        rs = [by[(n, f, s)] for f in faults if not by[(n, f, s)]["unreachable"]]
        stress = sum(1 for r in rs if r["verdict"] != "pass")
        fuzzed = sum(1 for r in rs if r.get("fuzz", {}).get("caught"))
        return f"{stress} + {fuzzed} of {len(rs)}"
    lines.append("| caught (stress + fuzz of reachable) | " +
                 " | ".join(" / ".join(counts(n, s) for s in seeds) for n in names) + " |")
    why = ["", "Unreachable (—), by deployment:", ""]
    for n in names:
        for fault in faults:
            r = by[(n, fault, seeds[0])]
            if r["unreachable"]:
                why.append(f"* {n}, `{fault}`: {r['unreachable']}")
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("Each cell: seed " + " / seed ".join(map(str, seeds)) +
                ": caught by the stress scenario (`stress:` the first finding's kind, the run's wall seconds), "
                "else by a `fuzz --around` campaign of the same seed (`fuzz:` its kind, the case index, seconds "
                "from the campaign's start), else **missed**; — where the deployment cannot reach the fault.\n\n" +
                "\n".join(lines) + "\n" + "\n".join(why) + "\n")


if __name__ == "__main__":
    main()
