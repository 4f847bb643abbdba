#!/usr/bin/env python3
"""The mutation campaign behind scripts/dev/mutants/run.sh (README.md there says how to read its table).

For each mutation patch: apply it to a scratch copy of the source tree, build `ppspec` there, run every
scenario of scenarios/serving/ and scenarios/regressions/ with `ppspec run --json`, and call the mutant
killed when a scenario that meets its [expect] on the unmutated tree does not meet it on the mutant.
Then locate the mutant's first wrong step: the first engine step whose engine probe events differ
between the unmutated and the mutated binary at the same seed. The patch is reversed whatever
happens (build failure, a crash, Ctrl-C), and the scratch copy is re-synchronised with the tree at
every start, so nothing of a mutant outlives its turn.

The unmutated ("baseline") binary, its scenario results and its probe digests are cached under the
build directory, keyed by a hash of the source tree (scripts/dev/mutants/ excluded), so a second campaign on
an unchanged tree does not run the baseline again.
"""
import argparse
import collections
import fcntl
import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIO_DIRS = ["scenarios/serving", "scenarios/regressions"]
# Every probe of what the engine computed or adopted: a value that differs in any of them is wrong.
PROBES = ("inputs_built", "stage_output", "tokens_sampled", "drafts_proposed", "drafts_adopted", "feedback_adopted",
          "padding_rows", "gate")
NICE = ["nice", "-n", "19"]
RUN_TIMEOUT_S = 900


def log(msg):
    print(msg, flush=True)


class Interrupted(Exception):
    pass


def on_signal(signum, _frame):
    raise Interrupted(f"signal {signum}")


# ---------------------------------------------------------------------------------------------
# The scratch copy of the tree

def tree_files():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "-z"], capture_output=True,
                         check=True).stdout.decode()
    files = [f for f in out.split("\0") if f and not f.startswith("scripts/dev/mutants/")]
    return sorted(f for f in files if os.path.isfile(os.path.join(ROOT, f)) and not os.path.islink(os.path.join(ROOT, f)))


def tree_hash(files):
    h = hashlib.sha1()
    for f in files:
        with open(os.path.join(ROOT, f), "rb") as fh:
            data = fh.read()
        h.update(f.encode() + b"\0" + hashlib.sha1(data).digest())
    return h.hexdigest()[:16]


def sync_scratch(files, src):
    """Makes `src` hold exactly the tree's files. A file is rewritten only when its bytes differ, with
    the current time as its mtime (never the tree's older one), so the build sees every change."""
    os.makedirs(src, exist_ok=True)
    wanted = set(files)
    copied = 0
    for f in files:
        a, b = os.path.join(ROOT, f), os.path.join(src, f)
        with open(a, "rb") as fh:
            data = fh.read()
        if os.path.isfile(b):
            with open(b, "rb") as fh:
                if fh.read() == data:
                    continue
        os.makedirs(os.path.dirname(b), exist_ok=True)
        with open(b, "wb") as fh:
            fh.write(data)
        shutil.copymode(a, b)
        copied += 1
    removed = 0
    for dirpath, _dirs, names in os.walk(src):
        for n in names:
            rel = os.path.relpath(os.path.join(dirpath, n), src)
            if rel not in wanted:
                os.remove(os.path.join(dirpath, n))
                removed += 1
    return copied, removed


def git_apply(src, patch, reverse=False, check=False):
    # The scratch copy lives inside the repository's build folder: stop git from finding that
    # repository, so that paths are taken relative to the scratch copy.
    env = dict(os.environ, GIT_CEILING_DIRECTORIES=os.path.dirname(os.path.abspath(src)))
    cmd = ["git", "apply"] + (["-R"] if reverse else []) + (["--check"] if check else []) + [patch]
    return subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True)


# ---------------------------------------------------------------------------------------------
# Building and running

def configure(src, bdir):
    if os.path.isfile(os.path.join(bdir, "build.ninja")):
        return
    log(f"configuring {bdir} (first build: several minutes)")
    subprocess.run(NICE + ["cmake", "--preset", "default", "-S", src, "-B", bdir, "-DPPSPEC_GPU=OFF", "-DPPSPEC_BENCH=OFF"],
                   cwd=src, check=True, stdout=subprocess.DEVNULL)


def build(bdir, jobs, targets=("ppspec",)):
    t0 = time.time()
    cmd = NICE + ["cmake", "--build", bdir, "-j", str(jobs)]
    for t in targets:
        cmd += ["--target", t]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode == 0, time.time() - t0, (r.stdout + r.stderr)[-3000:]


def scenarios(src):
    out = []
    for d in SCENARIO_DIRS:
        full = os.path.join(src, d)
        if os.path.isdir(full):
            out += sorted(f"{d}/{n}" for n in os.listdir(full) if n.endswith(".toml"))
    return out


def run_scenario(binary, src, scenario, extra=()):
    """One `ppspec run --json` of a scenario: a list of per-seed records, or a crash record."""
    cmd = NICE + [binary, "run", scenario, "--json"] + list(extra)
    try:
        r = subprocess.run(cmd, cwd=src, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"crash": f"timed out after {RUN_TIMEOUT_S} s", "rc": None}
    if r.returncode in (0, 1):
        try:
            runs = json.loads(r.stdout)
            return {"rc": r.returncode, "runs": [summarise(x) for x in runs]}
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            return {"crash": f"exit {r.returncode}, unreadable JSON ({e})", "rc": r.returncode}
    tail = (r.stderr.strip().splitlines() or ["(no output)"])[-1][:300]
    return {"crash": f"exit {r.returncode}: {tail}", "rc": r.returncode}


def summarise(rec):
    first = rec.get("first") or {}
    return {"seed": rec["seed"], "ok": bool(rec["ok"]), "verdict": rec["verdict"], "expected": rec.get("expected"),
            "kind": first.get("kind"), "engine_step": first.get("engine_step"), "summary": first.get("summary", "")}


def failed_runs(result):
    """The seeds of a scenario result that do not meet the expectation (a crash counts as one)."""
    if "crash" in result:
        return [{"seed": None, "ok": False, "verdict": "crash", "kind": result["crash"], "engine_step": None,
                 "expected": None, "summary": result["crash"]}]
    return [r for r in result["runs"] if not r["ok"]]


def unit_tests(bdir, regex, jobs):
    """Builds the test binary and runs `ctest -R regex`: (built, names of the tests that failed, seconds)."""
    t0 = time.time()
    ok, _secs, out = build(bdir, jobs, targets=("ppspec", "ppspec_tests"))
    if not ok:
        return False, [out[-300:]], time.time() - t0
    r = subprocess.run(NICE + ["ctest", "--test-dir", bdir, "-R", regex, "-j", str(jobs), "--timeout", "600"],
                       capture_output=True, text=True)
    failed, listing = [], False
    for line in r.stdout.splitlines():
        if "The following tests FAILED" in line:
            listing = True
        elif listing and " - " in line:
            failed.append(line.split(" - ", 1)[1].split(" (")[0].strip())
    if r.returncode != 0 and not failed:
        failed = [f"ctest exit {r.returncode}"]
    return True, failed, time.time() - t0


# ---------------------------------------------------------------------------------------------
# Probe digests and the first wrong step

def probe_digest(trace_path):
    """Per engine step, the multiset of the engine probe events (timing left out), and whether the
    run got to the end (the engine core's actor ended) rather than being halted by a finding."""
    steps = collections.defaultdict(collections.Counter)
    completed = False
    with open(trace_path) as fh:
        fh.readline()  # header
        for line in fh:
            if '"ev":"actor_end"' in line and '"actor":"engine"' in line:
                completed = True
                continue
            if not any(f'"ev":"{p}"' in line for p in PROBES):
                continue
            e = json.loads(line)
            key = json.dumps([e.get("ev"), e.get("rank"), e.get("req"), e.get("value"), e.get("text"), e.get("ints")])
            steps[int(e.get("step", -1))][key] += 1
    return {"completed": completed, "steps": {str(s): dict(c) for s, c in steps.items()}}


def first_wrong_step(base, mut):
    """The first engine step at which the mutant's probe events differ from the baseline's; None when
    they agree as far as the mutant's trace goes.

    A mutant run halted by a finding stops mid-pipeline: events the baseline has at a step may simply
    not have happened yet (the last stage samples step T after stage 0 built step T+1; a deferred
    update labelled with step T runs at T+pp). So for a halted run an event missing from the mutant
    counts only when the mutant's stream of that event kind on that rank got past the step (it has
    such an event at a later step); an event the baseline lacks always counts."""
    bs, ms = base["steps"], mut["steps"]
    progress = {}
    for s, events in ms.items():
        for k in events:
            ev, rank = json.loads(k)[:2]
            progress[(ev, rank)] = max(progress.get((ev, rank), -1), int(s))
    for s in sorted({int(s) for s in bs} | {int(s) for s in ms}):
        b = collections.Counter(bs.get(str(s), {}))
        m = collections.Counter(ms.get(str(s), {}))
        if b == m:
            continue
        if m - b or mut["completed"]:
            return s
        for k in (b - m):
            ev, rank = json.loads(k)[:2]
            if progress.get((ev, rank), -1) > s:
                return s
    return None


def first_event_diff(base, mut, step):
    """One line saying what differs at `step` (for the details section)."""
    b = collections.Counter(base["steps"].get(str(step), {}))
    m = collections.Counter(mut["steps"].get(str(step), {}))
    extra, missing = list((m - b).elements()), list((b - m).elements())

    def short(k):
        ev, rank, req, value, text, ints = json.loads(k)
        ints = ints or []
        s = f"{ev} rank{rank}" + (f" req {req}" if req is not None else "") + (f" {text}" if text else "")
        return s + f" {ints[:8]}{'...' if len(ints) > 8 else ''}"

    if extra:
        return "mutant: " + short(extra[0]) + (f"; baseline: {short(missing[0])}" if missing else "")
    if not mut["completed"]:  # only what the mutant's streams got past (first_wrong_step)
        progress = {}
        for s, events in mut["steps"].items():
            for k in events:
                ev, rank = json.loads(k)[:2]
                progress[(ev, rank)] = max(progress.get((ev, rank), -1), int(s))
        missing = [k for k in missing if progress.get(tuple(json.loads(k)[:2]), -1) > step]
    if missing:
        return "missing in the mutant: " + short(missing[0])
    return ""


class Digests:
    """Baseline digests cached on disk; mutant digests made and thrown away."""

    def __init__(self, cache_dir, work_dir):
        self.cache_dir, self.work_dir = cache_dir, work_dir
        os.makedirs(cache_dir, exist_ok=True)
        os.makedirs(work_dir, exist_ok=True)

    @staticmethod
    def key(scenario, seed):
        # The probes digested are part of the key: another list makes other digests.
        probes = hashlib.sha256(",".join(PROBES).encode()).hexdigest()[:8]
        return scenario.replace("/", "__")[:-5] + f".seed{seed}.probes{probes}"

    def make(self, binary, src, scenario, seed):
        path = os.path.join(self.work_dir, "trace.jsonl")
        if os.path.exists(path):
            os.remove(path)
        cmd = NICE + [binary, "run", scenario, "--seed", str(seed), "--seeds", "1", "--trace", path]
        try:
            subprocess.run(cmd, cwd=src, capture_output=True, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pass
        if not os.path.exists(path):
            return None
        try:
            return probe_digest(path)
        finally:
            os.remove(path)

    def baseline(self, binary, src, scenario, seed):
        path = os.path.join(self.cache_dir, self.key(scenario, seed) + ".json.gz")
        if os.path.exists(path):
            with gzip.open(path, "rt") as fh:
                return json.load(fh)
        d = self.make(binary, src, scenario, seed)
        if d is not None:
            with gzip.open(path + ".tmp", "wt") as fh:
                json.dump(d, fh)
            os.replace(path + ".tmp", path)
        return d


# ---------------------------------------------------------------------------------------------
# Patches

def patch_info(path):
    info = {"file": os.path.basename(path), "name": os.path.basename(path)[:-6], "family": "?", "what": ""}
    field = None
    with open(path) as fh:
        for line in fh:
            if not line.startswith("#"):
                break
            text = line[1:].strip()
            for k in ("family", "what", "analogue", "equivalent", "cause"):
                if text.startswith(k + ":"):
                    field = k
                    info[k] = text[len(k) + 1:].strip()
                    break
            else:
                if field and text:
                    info[field] += " " + text
    return info


# ---------------------------------------------------------------------------------------------
# Report

def fmt_step(s):
    return "-" if s is None else str(s)


def at_first(report_step, wrong):
    if report_step is None or wrong is None:
        return "-"
    if report_step == wrong:
        return "yes"
    return f"no (+{report_step - wrong})" if report_step > wrong else f"no ({report_step - wrong})"


def write_report(path, results, meta):
    unit = any("unit" in r for r in results)
    killed = [r for r in results if r["status"] == "killed"]
    survived = [r for r in results if r["status"] == "survived"]
    equivalent = [r for r in results if r["status"] == "equivalent"]
    broken = [r for r in results if r["status"] not in ("killed", "survived", "equivalent")]
    lines = [
        "# Mutation campaign results",
        "",
        f"Tree `{meta['tree']}` (commit {meta['commit']}), {meta['scenarios']} scenarios "
        f"({meta['usable']} meet their expectation unmutated), {meta['when']}; "
        + (f"unit tests `ctest -R '{meta['unit_regex']}'`; " if meta.get("unit_regex") else "")
        + f"total running time {meta['elapsed']}.",
        "",
        f"**Mutation score: {len(killed)} killed / {len(results) - len(equivalent)} non-equivalent mutants"
        + (f" ({100.0 * len(killed) / max(len(results) - len(equivalent), 1):.0f} %)" if results else "")
        + f"; {len(survived)} survived" + (f"; {len(equivalent)} equivalent (argued in the patch)" if equivalent else "")
        + (f"; {len(broken)} not run (patch or build failed)" if broken else "") + ".**",
        "",
        "| patch | family | result | killed by | verdict / kind | first report step | first wrong step | report at first wrong step |"
        + (" unit tests |" if unit else ""),
        "|---|---|---|---|---|---|---|---|" + ("---|" if unit else ""),
    ]
    for r in results:
        col = f" {r.get('unit', '-')} |" if unit else ""
        if r["status"] == "killed":
            p = r["primary"]
            by = f"`{os.path.basename(p['scenario'])[:-5]}`" + (f" (+{len(r['killers']) - 1})" if len(r["killers"]) > 1 else "")
            vk = f"{p['verdict']} / {p['kind']}" if p["verdict"] != "crash" else f"crash ({p['kind']})"
            if p["verdict"] == "pass":
                vk = f"pass (expected {p['expected']})"
            lines.append(f"| `{r['name']}` | {r['family']} | **killed** | {by} | {vk} | {fmt_step(p['engine_step'])} | "
                         f"{fmt_step(r.get('first_wrong'))} | {at_first(p['engine_step'], r.get('first_wrong'))} |{col}")
        elif r["status"] == "equivalent":
            lines.append(f"| `{r['name']}` | {r['family']} | equivalent (see details) | - | - | - | - | - |{col}")
        elif r["status"] == "survived":
            fw = r.get("first_wrong")
            where = f" (`{os.path.basename(r['first_wrong_scenario'])[:-5]}`)" if fw is not None else ""
            lines.append(f"| `{r['name']}` | {r['family']} | survived | - | - | - | {fmt_step(fw)}{where} | - |{col}")
        else:
            lines.append(f"| `{r['name']}` | {r['family']} | {r['status']} | - | - | - | - | - |{col}")
    lines += ["", "## Details", ""]
    for r in results:
        lines.append(f"### `{r['name']}` ({r['family']}): {r['status']}")
        lines.append("")
        lines.append(r["what"])
        lines.append("")
        if r["status"] == "killed":
            lines.append("Scenarios that fail their expectation on this mutant (first failing seed of each):")
            lines.append("")
            for k in r["killers"]:
                seed = f" seed {k['seed']}" if k["seed"] is not None else ""
                lines.append(f"* `{k['scenario']}`{seed}: {k['verdict']}"
                             + (f" / {k['kind']}" if k["kind"] and k["verdict"] != "crash" else "")
                             + (f" ({k['kind']})" if k["verdict"] == "crash" else "")
                             + (f" (expected {k['expected']})" if k["verdict"] == "pass" else "")
                             + (f", engine step {k['engine_step']}" if k["engine_step"] is not None else "")
                             + (f" ({k['failed_seeds']} of {k['seeds']} seeds)" if k["seeds"] > 1 else ""))
                if k is r["primary"] and k["summary"] and k["verdict"] != "crash":
                    lines.append(f"  - first report: {k['summary'][:400]}")
            lines.append("")
        elif r["status"] == "equivalent":
            lines.append(f"Equivalent: {r['equivalent']}")
            lines.append("")
        elif r["status"] != "survived":
            lines.append(f"```\n{r.get('error', '')[-1500:]}\n```")
            lines.append("")
        if r.get("unit_failed"):
            lines.append(f"Unit tests that fail on this mutant ({len(r['unit_failed'])}): "
                         + ", ".join(f"`{t}`" for t in r["unit_failed"]))
            lines.append("")
        fw = r.get("first_wrong")
        if r["status"] in ("killed", "survived"):
            if fw is not None:
                lines.append(f"First wrong step {fw} (`{r['first_wrong_scenario']}` seed {r['first_wrong_seed']}): "
                             f"{r.get('first_wrong_diff', '')}")
            else:
                lines.append("No engine probe event differs from the unmutated run "
                             + ("of the killing scenario at its seed." if r["status"] == "killed"
                                else "in any serving scenario at its first seed."))
            lines.append("")
    if meta.get("unusable"):
        lines += ["## Scenarios left out", "", "They do not meet their expectation on the unmutated tree, so they "
                  "decide nothing:", ""]
        lines += [f"* `{s}`: {why}" for s, why in meta["unusable"]]
        lines.append("")
    with open(path, "w") as fh:
        fh.write("\n".join(lines))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build", "mutant"),
                    help="where the scratch copy (src/), its build (build/) and the baseline cache live")
    ap.add_argument("--jobs", type=int, default=2, help="build jobs (default 2)")
    ap.add_argument("--out", help="the markdown table (default: scripts/dev/mutants/results.md for a full campaign, "
                                  "BUILD_DIR/results.md when patches are named)")
    ap.add_argument("--no-first-wrong", action="store_true", help="skip the traced runs that locate the first wrong step")
    ap.add_argument("--unit-tests", metavar="REGEX",
                    help="also build the unit tests and run `ctest -R REGEX` on each mutant (second column)")
    ap.add_argument("patches", nargs="*", help="patch files (default: scripts/dev/mutants/*.patch)")
    args = ap.parse_args()
    t_start = time.time()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    patches = [os.path.abspath(p) for p in args.patches] or sorted(
        os.path.join(HERE, f) for f in os.listdir(HERE) if f.endswith(".patch"))
    out_path = args.out or (os.path.join(HERE, "results.md") if not args.patches else
                            os.path.join(args.build_dir, "results.md"))
    bdir_root = os.path.abspath(args.build_dir)
    src, bdir = os.path.join(bdir_root, "src"), os.path.join(bdir_root, "build")
    work = os.path.join(bdir_root, "work")

    os.makedirs(bdir_root, exist_ok=True)
    lock = open(os.path.join(bdir_root, ".lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log(f"another campaign is using {bdir_root}; pass another --build-dir")
        return 2
    files = tree_files()
    thash = tree_hash(files)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", ".", ":!scripts/dev/mutants"], capture_output=True,
                           text=True).stdout.strip()
    commit += " + local changes" if dirty else ""
    copied, removed = sync_scratch(files, src)
    log(f"tree {thash} ({commit}): scratch copy {src} ({copied} files updated, {removed} removed)")
    configure(src, bdir)

    cache = os.path.join(bdir_root, "baseline", thash)
    os.makedirs(cache, exist_ok=True)
    base_bin = os.path.join(cache, "ppspec")
    scen = scenarios(src)
    results_path = os.path.join(cache, "scenarios.json")
    base = {}
    if os.path.exists(results_path):
        with open(results_path) as fh:
            base = json.load(fh)
    if not os.path.exists(base_bin) or any(s not in base for s in scen):
        if not os.path.exists(base_bin):
            log("building the unmutated tree")
            ok, secs, out = build(bdir, args.jobs)
            if not ok:
                log(out)
                log("the unmutated tree does not build")
                return 2
            log(f"  built in {secs:.0f} s")
            shutil.copy2(os.path.join(bdir, "tools", "ppspec"), base_bin + ".tmp")
            os.replace(base_bin + ".tmp", base_bin)
        for i, s in enumerate(scen):
            if s in base:
                continue
            base[s] = run_scenario(base_bin, src, s)
            log(f"  baseline [{i + 1}/{len(scen)}] {s}: "
                + ("crash" if "crash" in base[s] else ", ".join(sorted({r["verdict"] for r in base[s]["runs"]}))))
        with open(results_path + ".tmp", "w") as fh:
            json.dump(base, fh)
        os.replace(results_path + ".tmp", results_path)
    else:
        log(f"baseline: cached ({len(scen)} scenarios, {cache})")
    usable = [s for s in scen if not failed_runs(base[s])]
    unusable = [(s, ", ".join(f"{r['verdict']} (expected {r['expected']})" if r["verdict"] != "crash" else r["kind"]
                              for r in failed_runs(base[s])[:2])) for s in scen if failed_runs(base[s])]
    for s, why in unusable:
        log(f"  left out (fails unmutated): {s}: {why}")
    serving = [s for s in usable if s.startswith("scenarios/serving/")]
    digests = Digests(os.path.join(cache, "digests"), work)

    base_tests = None
    if args.unit_tests:
        key = hashlib.sha1(args.unit_tests.encode()).hexdigest()[:10]
        tests_path = os.path.join(cache, f"unit_tests.{key}.json")
        if os.path.exists(tests_path):
            with open(tests_path) as fh:
                base_tests = json.load(fh)
        else:
            log(f"unit tests on the unmutated tree (ctest -R '{args.unit_tests}')")
            ok, failed, secs = unit_tests(bdir, args.unit_tests, args.jobs)
            if not ok:
                log("the unmutated unit tests do not build")
                return 2
            base_tests = {"failed": failed}
            with open(tests_path, "w") as fh:
                json.dump(base_tests, fh)
            log(f"  {len(failed)} failing unmutated ({secs:.0f} s)" + (f": {', '.join(failed)}" if failed else ""))

    results = []
    interrupted = None
    for i, patch in enumerate(patches):
        info = patch_info(patch)
        r = dict(info)
        tag = f"[{i + 1}/{len(patches)}] {info['name']}"
        chk = git_apply(src, patch, check=True)
        if chk.returncode != 0:
            log(f"{tag}: does not apply: {chk.stderr.strip()}")
            r.update(status="patch does not apply", error=chk.stderr)
            results.append(r)
            continue
        applied = False
        t0 = time.time()
        try:
            ap_ = git_apply(src, patch)
            if ap_.returncode != 0:
                raise RuntimeError(f"git apply failed: {ap_.stderr}")
            applied = True
            log(f"{tag} ({info['family']}): building")
            ok, secs, out = build(bdir, args.jobs)
            if not ok:
                log(f"{tag}: build failed")
                r.update(status="build failed", error=out)
                results.append(r)
                continue
            mbin = os.path.join(bdir, "tools", "ppspec")
            log(f"{tag}: built in {secs:.0f} s; running {len(usable)} scenarios")
            killers = []
            for s in usable:
                res = run_scenario(mbin, src, s)
                bad = failed_runs(res)
                if bad:
                    k = dict(bad[0])
                    k.update(scenario=s, failed_seeds=len(bad), seeds=1 if "crash" in res else len(res["runs"]))
                    killers.append(k)
            if killers:
                # The primary killer: the earliest report (by engine step), scenario order breaking ties.
                primary = min(killers, key=lambda k: (k["engine_step"] is None, k["engine_step"] or 0))
                r.update(status="killed", killers=killers, primary=primary)
                log(f"{tag}: KILLED by {len(killers)} scenario(s); first: {primary['scenario']} -> {primary['verdict']}"
                    + (f" / {primary['kind']}" if primary["kind"] else "")
                    + (f" at engine step {primary['engine_step']}" if primary["engine_step"] is not None else ""))
            elif r.get("equivalent"):
                # A mutant argued to change no behaviour (its header says why): reported apart, and not a
                # failure of the campaign; a kill would show the argument wrong.
                r.update(status="equivalent")
                log(f"{tag}: survived, EQUIVALENT as its header argues")
            else:
                r.update(status="survived")
                log(f"{tag}: SURVIVED ({len(usable)} scenarios meet their expectation)")
            if base_tests is not None:
                ok, failed, secs = unit_tests(bdir, args.unit_tests, args.jobs)
                new = [t for t in failed if t not in base_tests["failed"]]
                r["unit"] = "build failed" if not ok else f"killed ({len(new)})" if new else "survived"
                r["unit_failed"] = new if ok else failed
                log(f"{tag}: unit tests {r['unit']} ({secs:.0f} s)" + (f": {', '.join(new[:3])}"
                                                                       + (", ..." if len(new) > 3 else "") if new else ""))
            if not args.no_first_wrong:
                if killers:
                    seed = primary["seed"]
                    if seed is None:  # a crash: its scenario's first seed
                        seed = base[primary["scenario"]]["runs"][0]["seed"]
                    candidates = [(primary["scenario"], seed)]
                else:
                    candidates = [(s, base[s]["runs"][0]["seed"]) for s in serving]
                best = None
                for s, seed in candidates:
                    bd = digests.baseline(base_bin, src, s, seed)
                    md = digests.make(mbin, src, s, seed)
                    if bd is None or md is None:
                        continue
                    fw = first_wrong_step(bd, md)
                    if fw is not None and (best is None or fw < best[0]):
                        best = (fw, s, seed, first_event_diff(bd, md, fw))
                if best:
                    r.update(first_wrong=best[0], first_wrong_scenario=best[1], first_wrong_seed=best[2],
                             first_wrong_diff=best[3])
                log(f"{tag}: first wrong step {fmt_step(best[0] if best else None)}"
                    + (f" ({best[1]} seed {best[2]}): {best[3]}" if best else " (no probe event differs)"))
            results.append(r)
        except (Interrupted, KeyboardInterrupt) as e:
            interrupted = e
        finally:
            if applied:
                rev = git_apply(src, patch, reverse=True)
                if rev.returncode != 0:
                    # Should not happen; fall back to re-copying the tree.
                    log(f"{tag}: git apply -R failed ({rev.stderr.strip()}); re-synchronising the scratch copy")
                    sync_scratch(files, src)
            log(f"{tag}: done in {time.time() - t0:.0f} s, scratch copy restored")
        if interrupted:
            break
    shutil.rmtree(work, ignore_errors=True)
    if interrupted:
        log(f"interrupted ({interrupted}); no table written")
        return 130

    elapsed = time.time() - t_start
    meta = {"tree": thash, "commit": commit, "scenarios": len(scen), "usable": len(usable), "unusable": unusable,
            "when": time.strftime("%Y-%m-%d %H:%M %Z"), "unit_regex": args.unit_tests, "elapsed": f"{elapsed / 60:.1f} min ({elapsed:.0f} s)"}
    text = write_report(out_path, results, meta)
    print()
    print(text)
    print()
    log(f"table written to {out_path}")
    if any(r["status"] not in ("killed", "survived", "equivalent") for r in results):
        return 2
    return 1 if any(r["status"] == "survived" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
