#!/usr/bin/env python3
"""Tests of the three-tool comparison's readers, without GPUs (ctest: three_tools_scripts).

* ras_poll: polls a fake RAS server that speaks NCCL's text protocol; judges reports (a clean one,
  a transient mismatch, a mismatch that stays, one that names ranks).
* three_tools_table: grades made-up answers of each tool against each fault's truth, both ways
  (right, wrong, missed, a false finding on the clean run).
"""
import json
import os
import socket
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ras_poll  # noqa: E402
import three_tools_table as table  # noqa: E402

HEADER = """Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      1          2            1          2        2

Communicators... (0.00s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
"""
CLEAN = HEADER + "    0         2         1         2         2         4   RUNNING      OK\n"
MISMATCH = HEADER + """    0         2         1         2         2         4   RUNNING  MISMATCH

Warnings
========

#0-1 (27a079b828ff1a75) MISMATCH
  Communicator ranks have different collective operation counts
  1 rank has launched up to operation {}
  1 rank has launched up to operation 12
"""
NAMED = HEADER + """    0         1         1         8         8         8   RUNNING  MISMATCH

Warnings
========

#0-0 (9e17999afaa87dbb) MISMATCH
  Communicator ranks have different collective operation counts
  7 ranks have launched up to operation 40
  1 rank has launched up to operation 39
  Rank 5 -- GPU 5 managed by process 4242 on node 127.0.0.1
"""


def fake_ras_server(answers):
    """A RAS client socket: answers each connection's STATUS with the next text; JSON on request."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def serve():
        for text in answers:
            for want_json in (False, True):
                conn, _ = server.accept()
                request = b""
                while not request.endswith(b"STATUS\n"):
                    request += conn.recv(1024)
                body = '{"communicators": []}' if want_json else text
                conn.sendall(((b"OK\n" if b"SET FORMAT json" in request else b"") + body.encode()))
                conn.close()
    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def check(condition, what):
    if not condition:
        raise SystemExit(f"FAIL: {what}")


def test_ras():
    port = fake_ras_server([CLEAN, MISMATCH.format(13)])
    first = ras_poll.poll_once("127.0.0.1", port, timeout=5)
    second = ras_poll.poll_once("127.0.0.1", port, timeout=5)
    check(first["text"] == CLEAN and first["json"] == {"communicators": []}, "a poll reads STATUS and the JSON")
    check(ras_poll.problem(first["text"]) is None, "a clean status is no problem")
    check(ras_poll.problem(second["text"]) is not None, "a MISMATCH is a problem")
    row_only = HEADER + "    0         1         1         2         2         2   RUNNING  INCOMPLETE\n"
    check(ras_poll.problem(row_only) is not None, "a communicator whose errors are not OK, with no section")
    polls = [{"unix_ns": i, "text": t} for i, t in enumerate([CLEAN, MISMATCH.format(13), MISMATCH.format(14),
                                                               MISMATCH.format(15), CLEAN])]
    check(ras_poll.judge(polls) is None, "counts that keep moving are not a finding")
    stuck = [{"unix_ns": i, "text": t} for i, t in enumerate([CLEAN] + [MISMATCH.format(13)] * 3)]
    found = ras_poll.judge(stuck)
    check(found is not None and found["unix_ns"] == 3 and found["ranks_named"] == [], "three same reports: a finding")
    check("different collective operation counts" in found["headline"], "its headline")
    check(ras_poll.judge(stuck[:3]) is None, "two same reports are not yet one")
    named = ras_poll.judge([{"unix_ns": i, "text": NAMED} for i in range(3)])
    check(named["ranks_named"] == [5], "the ranks RAS lists under its report")
    check(ras_poll.judge([{"unix_ns": 0, "error": "refused"}] * 4) is None, "unanswered polls are no finding")


def answer(named, cycle=False, found=True):
    return {"unix_ns": 0, "verdict": "v", "named": set(named), "cycle": cycle, "found": found}


def test_grades():
    extra = table.TRUTH["extra_broadcast"]
    check(table.grade(extra, answer([1])) == "right", "the culprit named right")
    check(table.grade(extra, answer([0])).startswith("wrong"), "the culprit named wrong")
    check(table.grade(extra, answer([])) == "not named", "no culprit named")
    check(table.grade(extra, answer([0, 1])).startswith("wrong"), "both ranks is not the culprit")
    check(table.grade(extra, None) == "missed", "nothing reported on a fault")
    check(table.grade(extra, answer([1], found=False)) == "missed", "an analyser that found nothing")
    check(table.grade(None, None) == "-", "nothing on the clean run")
    check(table.grade(None, answer([])) == "**false finding**", "a report on the clean run")
    cycle = table.TRUTH["ungrouped_exchange"]
    check(table.grade(cycle, answer([0, 1], cycle=True)) == "right (the cycle)", "a deadlock named as its cycle")
    check(table.grade(cycle, answer([0])) == "rank 0 only", "a deadlock seen on one rank only")


def test_table_reads_a_case():
    root = tempfile.mkdtemp()
    case = os.path.join(root, "extra_broadcast")
    os.makedirs(os.path.join(case, "fr"))
    open(os.path.join(case, "job.log"), "w").write("rank 1: fault extra_broadcast at 1000000000 ns\n")
    report = {"report": "misalignment", "unix_ns": 1250000000,
              "finding": {"verdict": "fifo-misalignment", "kind": "collective-mismatch", "summary": "s",
                          "culprit": {"rank": 1}, "sites": [{"rank": 1}, {"rank": 0}]}}
    open(os.path.join(case, "watch.jsonl"), "w").write(json.dumps(report) + "\n")
    open(os.path.join(case, "fr_trace.txt"), "w").write("error msg: Culprit rank 0; Error type: SIZE_OR_SYNTAX_MISMATCH\n")
    result = {"ranks": 2, "exit": 1, "ras": {"finding": None, "polls": 30, "answered": 0},
              "flight_recorder": {"dumps": ["rank_0", "rank_1"], "dump_mtimes_ns": [16000000000, 17000000000],
                                  "fr_trace_s": 2.0}}
    json.dump(result, open(os.path.join(case, "result.json"), "w"))
    rows = {tool: (graded, secs) for _, tool, _, graded, secs, _ in table.rows(root)}
    check(rows["ppspec watch"] == ("right", "0.25"), f"ppspec's row {rows['ppspec watch']}")
    check(rows["NCCL RAS"] == ("missed", "-"), f"RAS's row {rows['NCCL RAS']}")
    check(rows["Flight Recorder + fr_trace"] == ("wrong (rank 0)", "18.00"), f"fr_trace's row {rows}")
    verdicts = {tool: verdict for _, tool, verdict, _, _, _ in table.rows(root)}
    check(verdicts["NCCL RAS"] == "never answered (30 polls)", "a RAS that never answered is said, not 'nothing'")
    clean = os.path.join(root, "clean")
    os.makedirs(clean)
    json.dump(dict(result, flight_recorder={"dumps": [], "dump_mtimes_ns": []}), open(os.path.join(clean, "result.json"), "w"))
    graded = {g for name, _, _, g, _, _ in table.rows(root) if name == "clean"}
    check(graded == {"**the clean job failed**: no evidence either way"}, f"a clean job that failed is no pass: {graded}")


if __name__ == "__main__":
    test_ras()
    test_grades()
    test_table_reads_a_case()
    print("three_tools scripts: all checks passed")
