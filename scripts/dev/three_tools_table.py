#!/usr/bin/env python3
"""The three-tool table from scripts/dev/three_tools.py's folder: per case and tool, the verdict, the
culprit it named (right or wrong against the fault put in), and the time from the faulty call.

    python3 scripts/dev/three_tools_table.py DIR > table.md

The tools, each read as its user reads it:
* ppspec: the first report `ppspec watch --json` printed while the job ran (a misalignment, or a
  stall after --stall seconds); its culprit is the finding's culprit rank, else the one rank its
  sites all name; `cycle` when its sites name a wait-for cycle;
* RAS: scripts/dev/ras_poll.py's judgement of the polls (the same report that is not clean three polls
  running); its culprit, the ranks its text names under that report;
* Flight Recorder: the dumps the watchdog wrote, read by PyTorch's fr_trace (its first `error msg`
  and `Culprit rank`), and, beside it, by `ppspec check` (its first finding).
Time: from the first `fault ... at T ns` line of the job's log to the report (RAS: the poll that
settled it; Flight Recorder: the last dump written, plus the analyser's own run time).
"""
import json
import os
import re
import sys

# What was put in, and what a right answer names: a rank, or for a deadlock both ranks' cycle.
TRUTH = {
    "clean": None,
    "skipped_collective": {"rank": 1, "what": "rank 1 skips its `drafts` broadcast"},
    "extra_broadcast": {"rank": 1, "what": "rank 1 posts `drafts` twice"},
    "size_mismatch": {"rank": 0, "what": "rank 0's `sampled` is [4], not [4, 6]"},
    "dtype_mismatch": {"rank": 1, "what": "rank 1's `counts` is i64, not i32"},
    "wrong_peer": {"rank": 0, "what": "rank 0 sends its activations to rank 2, not 1 (3 ranks)"},
    "inverted_order": {"cycle": True, "rank": 0, "what": "rank 0 posts the broadcasts before its send"},
    "ungrouped_exchange": {"cycle": True, "what": "ranks 0 and 1 each send 64 MiB, then receive, ungrouped"},
}


def fault_ns(case_dir):
    times = [int(m) for m in re.findall(r"fault \S+ at (\d+) ns", read(case_dir, "job.log"))]
    return min(times) if times else None


def read(case_dir, name):
    path = os.path.join(case_dir, name)
    return open(path, errors="replace").read() if os.path.exists(path) else ""


def ppspec_answer(case_dir):
    for line in read(case_dir, "watch.jsonl").splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if "report" not in r:
            continue
        f = r["finding"]
        ranks = {s["rank"] for s in f.get("sites", []) if isinstance(s.get("rank"), int)}
        culprit = f.get("culprit", {}).get("rank")
        named = {culprit} if isinstance(culprit, int) else (ranks if len(ranks) == 1 else set())
        cycle = f.get("verdict") == "deadlock" or "cycle" in f.get("summary", "")
        return {"unix_ns": r["unix_ns"], "verdict": f"{r['report']}: {f.get('verdict')} ({f.get('kind')})",
                "named": named, "cycle": cycle and len(ranks) >= 2, "summary": f.get("summary", "")}
    return None


def ppspec_end(case_dir):
    """What the watcher said at the end when it reported nothing while the job ran."""
    for line in reversed(read(case_dir, "watch.jsonl").splitlines()):
        try:
            summary = json.loads(line).get("summary")
        except ValueError:
            continue
        if summary:
            return f"no report; at the end: {summary['verdict']} ({summary['stats']['ops_posted']} operations)"
    err = read(case_dir, "watch.err").strip().splitlines()
    return f"no report; at the end: {err[-1][:120] if err else 'no summary'}"


def silence(tool, case_dir, result):
    """Why a tool has no answer: it looked and saw nothing wrong, or it had nothing to look at."""
    if tool == "ppspec watch":
        return ppspec_end(case_dir)
    if tool == "NCCL RAS":
        answered = result["ras"]["answered"]
        return f"nothing stuck in {answered} answered polls" if answered else f"never answered ({result['ras']['polls']} polls)"
    return "no dump (the watchdog did not fire)" if not result["flight_recorder"]["dumps"] else "nothing"


def ras_answer(result):
    f = result["ras"]["finding"]
    if f is None:
        return None
    return {"unix_ns": f["unix_ns"], "verdict": f"stuck: {f['headline'] or 'status not OK'}",
            "named": set(f["ranks_named"]), "cycle": False, "summary": f["headline"]}


def fr_trace_answer(case_dir, result):
    fr = result["flight_recorder"]
    if not fr["dumps"]:
        return None
    text = read(case_dir, "fr_trace.txt")
    error = re.search(r"error msg: (.*)", text)
    culprit = re.search(r"Culprit rank (\d+)", text)
    first = error.group(1).strip() if error else next((l for l in text.splitlines() if l.strip()), "")
    done_ns = max(fr["dump_mtimes_ns"]) + int(fr.get("fr_trace_s", 0) * 1e9)
    return {"unix_ns": done_ns, "verdict": f"{len(fr['dumps'])} dump(s): {first[:140]}",
            "named": {int(culprit.group(1))} if culprit else set(), "cycle": False, "summary": first,
            "found": bool(error or culprit)}


def check_answer(case_dir, result):
    fr = result["flight_recorder"]
    text = read(case_dir, "fr_check.json")
    if not fr["dumps"] or not text:
        return None
    try:
        reports = json.loads(text)
    except ValueError:
        return {"unix_ns": max(fr["dump_mtimes_ns"]), "verdict": f"exit {fr.get('ppspec_check_exit')}: {text[:120]}",
                "named": set(), "cycle": False, "summary": text[:120], "found": False}
    r = reports[0]
    first = r.get("first") or {}
    culprit = first.get("culprit_rank")
    return {"unix_ns": max(fr["dump_mtimes_ns"]), "verdict": f"{r['verdict']}: {first.get('summary', '')[:140]}",
            "named": {culprit} if isinstance(culprit, int) else set(), "cycle": r["verdict"] == "deadlock",
            "summary": first.get("summary", ""), "found": r["verdict"] != "pass"}


def grade(truth, answer):
    if answer is None:
        return "-" if truth is None else "missed"
    if truth is None:
        return "**false finding**"
    if answer.get("found") is False:
        return "missed"
    if truth.get("cycle"):
        return "right (the cycle)" if answer["cycle"] else (
            f"rank {fmt(answer['named'])} only" if answer["named"] else "not named")
    if not answer["named"]:
        return "not named"
    return "right" if answer["named"] == {truth["rank"]} else f"wrong (rank {fmt(answer['named'])})"


def fmt(ranks):
    return ", ".join(str(r) for r in sorted(ranks))


def seconds(answer, t0):
    if answer is None or t0 is None or answer.get("found") is False:
        return "-"
    return f"{(answer['unix_ns'] - t0) / 1e9:.2f}"


def rows(root):
    for name in TRUTH:
        case_dir = os.path.join(root, name)
        if not os.path.exists(os.path.join(case_dir, "result.json")):
            continue
        result = json.load(open(os.path.join(case_dir, "result.json")))
        t0 = fault_ns(case_dir)
        tools = [("ppspec watch", ppspec_answer(case_dir)), ("NCCL RAS", ras_answer(result)),
                 ("Flight Recorder + fr_trace", fr_trace_answer(case_dir, result)),
                 ("Flight Recorder + ppspec check", check_answer(case_dir, result))]
        for tool, answer in tools:
            verdict = silence(tool, case_dir, result) if answer is None else answer["verdict"]
            graded = grade(TRUTH[name], answer)
            if graded == "-" and result["exit"] != 0:
                graded = "**the clean job failed**: no evidence either way"
            yield (name, tool, verdict.replace("|", "/"), graded, seconds(answer, t0), result)


def main():
    root = sys.argv[1]
    print("| case | tool | verdict | culprit | s from the faulty call |")
    print("|---|---|---|---|---:|")
    last = None
    for name, tool, verdict, graded, secs, result in rows(root):
        label = "" if name == last else f"**{name}** ({result['ranks']} ranks, job exit {result['exit']})"
        last = name
        print(f"| {label} | {tool} | {verdict} | {graded} | {secs} |")
    print()
    for name, truth in TRUTH.items():
        print(f"* `{name}`: {truth['what'] if truth else 'no fault'}")


if __name__ == "__main__":
    sys.exit(main())
