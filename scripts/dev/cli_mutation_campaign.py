#!/usr/bin/env python3
"""Mutates scenario files and traces and runs the real `ppspec` command line over them.

Complements the libFuzzer targets (libfuzzer/), which call the readers in-process: this drives the whole
command (argument parsing, loading, the simulator, reports in text and JSON, trace writing, `check`)
as a user does. Every case must end in exit 0, 1 or 2 within the time limit, with no "internal
error" and, for --json, a JSON document on stdout. Anything else is saved under OUT/bugs/.

    scripts/dev/cli_mutation_campaign.py [--cases N] [--seed S] [--out DIR] [--ppspec PATH]

Not part of CI: a few thousand cases take minutes.
"""
import argparse
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

VALUES = [
    "-1", "0", "1", "2", "3", "7", "64", "1024", "2147483648", "4294967297", "9223372036854775807",
    "-9223372036854775808", "1.5", "-0.5", "1e300", "nan", "inf", "true", "false", '""', '"x"', '"main"',
    '"side"', '"pct:0"', '"pct:65"', '"pct:3:0"', '"random"', '"eager"', '"lazy"', '"jit"', '"serial"',
    '"emulate"', '"a\\nFAIL b"', '"\\u0000"', "[]", "[1, 2]", '["module-load-in-flight"]', "{}", '"' + "y" * 300 + '"',
    '"deadlock"', '"pass"', '"stale-draft"', '"hang"', '"invalid-usage"', '"serving"', '"program"',
]
OPS = ["send", "recv", "broadcast", "all_reduce", "all_gather", "group_start", "group_end", "launch", "preload",
       "record", "wait_event", "event_sync", "stream_sync", "device_sync", "malloc", "sleep", "capture_begin",
       "capture_end", "graph_launch", "wait_flag", "set_flag"]


def nearby(value, rng):
    """A value of the same type, near the original: mutations that mostly still load."""
    v = value.strip()
    if re.fullmatch(r"-?[0-9]+", v):
        n = int(v)
        return str(rng.choice([0, 1, 2, n - 1, n + 1, n * 2, n // 2, n * 1000]))
    if re.fullmatch(r'"[a-z_:0-9.-]*"', v):
        return rng.choice(['"main"', '"side"', '"w"', '"pass"', '"deadlock"', '"eager"', '"lazy"', '"jit"',
                           '"pct:2"', '"random"', '"emulate"', '"serial"', v])
    return rng.choice(VALUES)


def mutate(text, rng):
    lines = text.split("\n")
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.random()
        i = rng.randrange(len(lines))
        if kind < 0.45 and "=" in lines[i]:
            # Replace one value (possibly inside an inline table).
            spots = [m for m in re.finditer(r"=\s*([^,}\]\n]+)", lines[i])]
            if spots:
                m = rng.choice(spots)
                new = nearby(m.group(1), rng) if rng.random() < 0.7 else rng.choice(VALUES)
                lines[i] = lines[i][:m.start(1)] + new + " " + lines[i][m.end(1):]
        elif kind < 0.6 and 'op = "' in lines[i]:
            lines[i] = re.sub(r'op = "[a-z_]+"', 'op = "%s"' % rng.choice(OPS), lines[i], count=1)
        elif kind < 0.7:
            del lines[i]
        elif kind < 0.8:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif kind < 0.9:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines.insert(i, rng.choice(["[rank.0.thread.t]", "ops = [ { op = \"sleep\", us = 1 } ]", "[rank.01]",
                                        "[runtime]", "max_steps = 5000", "memory_budget_mb = 1",
                                        "[[communicator]]", "name = \"w\"", "ranks = [0, 1]", "repeat = 3"]))
    return "\n".join(lines)


def mutate_trace(lines, rng):
    lines = list(lines)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        kind = rng.random()
        if kind < 0.6:
            spots = list(re.finditer(r':(-?[0-9]+|"[^"]*"|true|false)', lines[i]))
            if spots:
                m = rng.choice(spots)
                lines[i] = lines[i][:m.start(1)] + rng.choice(VALUES) + lines[i][m.end(1):]
        elif kind < 0.75:
            del lines[i]
        elif kind < 0.9:
            lines.insert(i, lines[rng.randrange(len(lines))])
        else:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    return lines


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout,
                           preexec_fn=lambda: __import__("resource").setrlimit(
                               __import__("resource").RLIMIT_AS, (6 << 30, 6 << 30)))
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


def judge(code, out, err, json_out):
    if code == "timeout":
        return "slow"
    if code not in (0, 1, 2):
        return "exit %s" % code
    if "internal error" in err:
        return "internal error"
    if json_out and code in (0, 1):
        try:
            json.loads(out)
        except ValueError:
            return "stdout is not JSON"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="/tmp/ppspec_cli_campaign")
    ap.add_argument("--ppspec", default=os.path.join(ROOT, "build/default/tools/ppspec"))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(os.path.join(args.out, "bugs"))
    os.makedirs(os.path.join(args.out, "slow"))
    seeds = sorted(glob.glob(os.path.join(ROOT, "scenarios/**/*.toml"), recursive=True) +
                   glob.glob(os.path.join(ROOT, "tests/robustness/*.toml")) +
                   glob.glob(os.path.join(ROOT, "libfuzzer/seeds/*.toml")))
    texts = [open(f).read() for f in seeds]
    counts = {0: 0, 1: 0, 2: 0}
    bugs = 0
    slow = 0
    for case in range(args.cases):
        path = os.path.join(args.out, "case.toml")
        trace = os.path.join(args.out, "case.jsonl")
        with open(path, "w") as f:
            f.write(mutate(rng.choice(texts), rng))
        json_out = rng.random() < 0.5
        cmd = [args.ppspec, "run", path, "--seeds", "1", "--trace", trace]
        if json_out:
            cmd.append("--json")
        code, out, err = run(cmd, 60)
        verdict = judge(code, out, err, json_out)
        if verdict is None and code in (0, 1) and os.path.exists(trace):
            # The trace it wrote checks (exit 0 or 1), and so does a mutation of it (0, 1 or 2).
            code2, out2, err2 = run([args.ppspec, "check", trace], 60)
            verdict = judge(code2, out2, err2, False) or (None if code2 in (0, 1) else "own trace refused: " + err2[:200])
            if verdict is None:
                lines = open(trace).read().split("\n")
                with open(trace, "w") as f:
                    f.write("\n".join(mutate_trace(lines, rng)))
                code3, out3, err3 = run([args.ppspec, "check", trace, "--json"], 60)
                verdict = judge(code3, out3, err3, True)
        if verdict is not None:
            # A run past the time limit is listed, not counted as a bug: mutations such as
            # num_requests = 24000 ask for minutes of honest work (the step budget still bounds it).
            slow += verdict == "slow"
            bugs += verdict != "slow"
            keep = os.path.join(args.out, "slow" if verdict == "slow" else "bugs", "case%05d" % case)
            os.makedirs(keep)
            shutil.copy(path, keep)
            if os.path.exists(trace):
                shutil.copy(trace, keep)
            with open(os.path.join(keep, "why.txt"), "w") as f:
                f.write("%s\n%s\n%s\n%s\n" % (verdict, " ".join(cmd), out[-2000:], err[-2000:]))
            print("case %d: %s (%s)" % (case, verdict, keep), flush=True)
        elif isinstance(code, int):
            counts[code] += 1
        if os.path.exists(trace):
            os.remove(trace)
    print("%d cases: %d exit 0, %d exit 1, %d exit 2, %d over the time limit (OUT/slow), %d bugs"
          % (args.cases, counts[0], counts[1], counts[2], slow, bugs))
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
