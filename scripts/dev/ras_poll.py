#!/usr/bin/env python3
"""Polls NCCL's RAS (its text client socket, NCCL_RAS_ADDR) as a user with `ncclras` would.

    python3 scripts/dev/ras_poll.py --addr 127.0.0.1:28028 --every 1 --out polls.jsonl [--until-file F]

Each poll connects, sends `STATUS` (the same request `ncclras` sends; the protocol is text, NCCL's
src/ras/client.cc) and reads the answer to its end; then, on a second connection, `SET FORMAT json`
and `STATUS` (NCCL 2.28.7 on) for the per-rank collective counts. One JSON line per poll: when it was
asked (unix_ns), how long the answer took, the text, the JSON (or the error). Stops when --until-file
exists or after --limit seconds.

`judge(polls)` reads those lines the way RAS's documentation tells a user to: a report that is not
clean (a communicator whose status is not RUNNING or whose errors are not OK, or an Errors or
Warnings section) is a finding only when three consecutive polls, --every apart, give the same report
("if the output does not change across subsequent RAS queries, it may indicate that the communicator
is stuck"). The ranks it names are those its text lists under the finding (`Rank N -- GPU ...`);
RAS lists the members of an outlier group only when the group is at most a quarter of the
communicator (half in verbose mode), so in a two-rank communicator it names none.
"""
import argparse
import json
import os
import re
import socket
import sys
import time


def ask(host, port, commands, timeout):
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall("".join(c + "\n" for c in commands).encode())
        chunks = []
        while True:
            data = s.recv(65536)
            if not data:
                break
            chunks.append(data)
    text = b"".join(chunks).decode(errors="replace")
    # `SET FORMAT` answers OK on a line of its own before the status.
    return text[3:] if text.startswith("OK\n") else text


def poll_once(host, port, timeout):
    line = {"unix_ns": time.time_ns()}
    try:
        line["text"] = ask(host, port, ["STATUS"], timeout)
        line["text_s"] = (time.time_ns() - line["unix_ns"]) / 1e9
        try:
            line["json"] = json.loads(ask(host, port, ["SET FORMAT json", "STATUS"], timeout))
        except (ValueError, OSError) as e:
            line["json_error"] = str(e)
    except OSError as e:
        line["error"] = str(e)
    return line


def poll(addr, every, out, until_file, limit):
    host, port = addr.rsplit(":", 1)
    start = time.monotonic()
    with open(out, "w") as f:
        while time.monotonic() - start < limit and not (until_file and os.path.exists(until_file)):
            asked = time.monotonic()
            f.write(json.dumps(poll_once(host, int(port), timeout=10.0)) + "\n")
            f.flush()
            time.sleep(max(0.0, every - (time.monotonic() - asked)))


TABLE_ROW = re.compile(r"^\s*\d+\s+\d+\s+\S+\s+\S+\s+\S+\s+\d+\s+(\S+)\s+(\S+)\s*$")


def problem(text):
    """The part of a text STATUS that is not clean, normalised for comparison; None when clean."""
    rows = [m.groups() for m in map(TABLE_ROW.match, text.splitlines()) if m]
    bad_rows = [r for r in rows if r != ("RUNNING", "OK")]
    sections = text.split("\nErrors\n", 1)[1:] + text.split("\nWarnings\n", 1)[1:]
    if not rows and not sections:
        return None  # no communicator yet (or already gone): nothing to judge
    if not bad_rows and not sections:
        return None
    body = re.sub(r"\(\d+\.\d+s\)", "", text[text.find("Communicators"):])
    return body.strip()


def judge(polls, repeats=3):
    """The first finding, as a user polling RAS would conclude it, or None: the same report that is
    not clean in `repeats` consecutive polls (3, at 1 s: unchanged for 2 s, past a slow init)."""
    previous, same = None, 0
    for p in polls:
        current = problem(p.get("text", "")) if "text" in p else None
        same = same + 1 if current is not None and current == previous else 1
        previous = current
        if current is not None and same >= repeats:
            named = sorted({int(r) for r in re.findall(r"^\s*Rank (\d+) --", current, re.M)})
            headline = next((l.strip() for l in current.splitlines()
                             if "have" in l or "Missing" in l or "considered dead" in l), "")
            return {"unix_ns": p["unix_ns"], "report": current, "ranks_named": named, "headline": headline}
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--addr", default="127.0.0.1:28028")
    p.add_argument("--every", type=float, default=1.0)
    p.add_argument("--out", required=True)
    p.add_argument("--until-file", default="")
    p.add_argument("--limit", type=float, default=600.0)
    args = p.parse_args()
    poll(args.addr, args.every, args.out, args.until_file, args.limit)


if __name__ == "__main__":
    sys.exit(main())
