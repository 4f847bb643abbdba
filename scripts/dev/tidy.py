#!/usr/bin/env python3
"""The repository's rules, held by a test (ctest `tidy`), as TigerBeetle's tidy holds its own.

Usage: scripts/dev/tidy.py [ROOT]          checks the tracked files of ROOT (default: this repository)
       scripts/dev/tidy.py --self-test     proves each rule fails on a planted violation
Exits 1 naming file, line and rule for every violation.

Rules:
  process-words  product files and docs describe ppspec as it is: no numbers of this project's
                 tracker ("issue 24", "issue24"), no work-log words ("stop 6", "the ninth round",
                 "this wave", "session"), no commit hashes, no talk of machines lent. Upstream
                 references (vLLM #55745, a PyTorch or NCCL issue) are product knowledge and pass.
                 Applies to file names too. Raw tool output kept as evidence is data, not prose:
                 only the READMEs of docs/evidence/ and the corpora are read.
  includes       a C++ folder includes only the folders docs/DESIGN.md's dependency table allows.
  closed-sets    no string literal where a closed set has an enum: scenario kinds, trace backends,
                 finding kinds (core/finding_kinds.h), the calls that drain a device; no decision
                 taken by searching a finding's English summary.
  line-length    no line of C++ over 120 columns (.clang-format's ColumnLimit).
  mutants        every mutation patch of scripts/dev/mutants/ applies to the tree as it is (git apply --check):
                 the mutation campaign and its table are re-derived from them, so a patch the code has
                 moved past is a broken measurement, not a survivor.
  layout         every C++ file as clang-format lays it out (.clang-format; Debian 12's clang-format 14,
                 which scripts/install_deps.sh installs). A table kept as written says so between
                 `// clang-format off` and `// clang-format on`.
"""
import os
import re
import subprocess
import sys

UPSTREAM = re.compile(r"(?i)(vllm|pytorch|torch|nccl|sglang|tensorrt|triton|cuda|nvidia|rapidcheck|github|boost|"
                      r"mimalloc|perfetto|cpython|clang|gcc|llvm|ray|deepspeed|megatron|huggingface|kimi|rbln|nixl|ascend)"
                      r"[\w./-]*\s*(pr|issue|pull|discussion)?s?\s*$")
# "#3" alone is ppspec's own numbering (collective #3, the #1 finding): only "issue N" is the tracker's.
TRACKER = re.compile(r"(?i)\bissues?[ _-]?#?(\d+)\b")
# "stop" (a stop token, a kernel's stop) and "wave" (vLLM's data-parallel wave) are product words:
# only the work log's phrases are flagged.
PROCESS = re.compile(r"(?i)\b(session|wave)s? ?#?\d+\b|\bround ?#?\d+\b(?! *(trip|robin))|"
                     r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|previous|next|this|earlier|"
                     r"later|hardening) (stop|wave|session)s?\b")
HASH = re.compile(r"(?<![0-9a-zA-Z_#x.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])([0-9a-f]{7,12}|[0-9a-f]{40})(?![0-9a-zA-Z_])")
UPSTREAM_LINE = re.compile(r"(?i)\b(vllm|pytorch|nccl|sglang|tensorrt)\b[^.]*\bcommit\b")
LENT = re.compile(r"(?i)\b(lent|lending)\b")

TEXT_SUFFIXES = (".md", ".cc", ".h", ".cu", ".cuh", ".py", ".sh", ".toml", ".txt", ".cmake", ".json", ".mjs")
CPP_SUFFIXES = (".cc", ".h", ".cu", ".cuh")
# Data, not prose: recorded inputs and tool output, read by tests or kept as evidence.
DATA_PREFIXES = ("traces/corpus/", "libfuzzer/corpus/", "libfuzzer/findings/", "tests/robustness/",
                 "tests/robustness-inputs/", "tests/fr_differential/", "tests/nccl_profiler_differential/",
                 "scripts/dev/trace_loader/package-lock.json", "scripts/dev/mutants/")
PRODUCT_CPP_SKIP = ("tests/", "bench/", "libfuzzer/", "property_tests/")

CLOSED_SETS = [
    (re.compile(r'\bkind\s*(==|!=)\s*"(program|serving)"'), "a scenario kind as a string: core::ScenarioKind"),
    (re.compile(r'\bbackend\s*(==|!=)\s*"(sim|gpu|nccl-profiler)"'), "a trace backend as a string: traces::TraceBackend"),
    (re.compile(r'\.kind\s*(=|==|!=)\s*"[a-z0-9]+(-[a-z0-9]+)*"'), "a finding kind as a literal: core/finding_kinds.h"),
    (re.compile(r'\b(note|untimed_note|finding_at|reported|limit_finding)\(\s*"[a-z0-9]+(-[a-z0-9]+)*"'),
     "a finding kind as a literal: core/finding_kinds.h"),
    (re.compile(r'\.what\s*(==|!=)\s*"(module load|malloc|device_sync)"'), "a drain told by its words: sim::BlockingKind"),
    (re.compile(r'\bsummary\.r?find\(\s*"(request|step|rank)'), "a decision on a finding's prose: use its typed fields"),
]


def tracked(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
    return [p for p in out.decode().split("\0") if p and os.path.isfile(os.path.join(root, p))]


def is_prose(path):
    if path.startswith("docs/evidence/"):
        return path.endswith("README.md")
    if path.startswith(DATA_PREFIXES):
        return path.endswith("README.md")
    return path.endswith(TEXT_SUFFIXES) or os.path.basename(path) == "CMakeLists.txt"


def tracker_hits(line):
    for m in TRACKER.finditer(line):
        before = line[:m.start()]
        if UPSTREAM.search(before[-48:]) or re.search(r"(?i)(vllm|pytorch|nccl|sglang)[\w.-]*/[\w.-]*$", before):
            continue
        yield m.group(0)


def process_word_violations(path, text):
    found = []
    for rule, pattern in (("a tracker number", None), ("a work-log word", PROCESS), ("a commit hash", HASH),
                          ("machines lent", LENT)):
        for n, line in enumerate(text.split("\n"), 1):
            if pattern is None:
                hits = list(tracker_hits(line))
            elif pattern is HASH and UPSTREAM_LINE.search(line):
                hits = []  # an upstream commit, named beside its project
            else:
                hits = [m.group(0) for m in pattern.finditer(line)]
            found += [(path, n, f"process-words: {rule} '{h}'") for h in hits]
    return found


def name_violations(path):
    found = []
    for part in path.split("/"):
        if re.search(r"(?i)issue\d+|\b(stop|round|wave|session)\d+\b|(ninth|eighth|seventh|sixth)_stop", part) or \
                HASH.search(part.replace("-", " ").replace("_", " ")):
            found.append((path, 0, f"process-words: a work item or hash in the name '{part}'"))
    return found


def read_dependency_table(root):
    text = open(os.path.join(root, "docs/DESIGN.md"), encoding="utf-8").read()
    m = re.search(r"```deps\n(.*?)```", text, re.S)
    if not m:
        return None
    table = {}
    for line in m.group(1).splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        folder, _, deps = line.partition(":")
        table[folder.strip()] = set(deps.split())
    return table


def library_of(path, table):
    """The table's folder a path lies in: the longest one it starts with (scenario/fuzzer/, then scenario/)."""
    parts = path.split("/")
    for k in range(len(parts) - 1, 0, -1):
        folder = "/".join(parts[:k])
        if folder in table:
            return folder
    return None


def include_violations(path, text, table):
    folder = library_of(path, table)
    if folder is None:
        return []
    allowed = table[folder] | {folder}
    found = []
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r'\s*#\s*include\s+"([a-z_]+/[^"]+)"', line)
        if not m:
            continue
        # A folder named in the table may be included whole; a file named there (engine/config.h), alone.
        included = m.group(1)
        if library_of(included, table) not in allowed and included not in allowed and "*" not in table[folder]:
            found.append((path, n, f"includes: {folder}/ may not include {included} (docs/DESIGN.md's table)"))
    return found


def closed_set_violations(path, text):
    found = []
    for n, line in enumerate(text.split("\n"), 1):
        code = line.split("//")[0]
        for pattern, why in CLOSED_SETS:
            if pattern.search(code):
                found.append((path, n, f"closed-sets: {why}"))
    return found


# A line over the limit because of one long string literal is data (a JSON line a test reads, a
# message a test expects): clang-format leaves it whole, and so does this rule.
LONG_LITERAL = re.compile(r'"(?:[^"\\]|\\.){60,}"')


RAW_STRING = re.compile(r'R"([^(\s]*)\((.*?)\)\1"', re.S)


def line_length_violations(path, text):
    in_raw = set()  # lines a raw string literal spans: their text is the literal's, data too
    for m in RAW_STRING.finditer(text):
        first = text.count("\n", 0, m.start()) + 1
        in_raw.update(range(first, first + m.group(0).count("\n") + 1))
    return [(path, n, f"line-length: {len(line)} columns (at most 120)")
            for n, line in enumerate(text.split("\n"), 1)
            if len(line) > 120 and n not in in_raw and not LONG_LITERAL.search(line)]


def layout_violations(root, paths):
    """The C++ files clang-format would change: one violation each, naming the first line it would."""
    import shutil
    exe = shutil.which("clang-format")
    if exe is None:
        return [(".clang-format", 0, "layout: no clang-format on PATH (scripts/install_deps.sh installs it)")]
    found = []
    for i in range(0, len(paths), 200):
        out = subprocess.run([exe, "--dry-run", "--style=file"] + paths[i:i + 200], cwd=root, capture_output=True,
                             text=True).stderr
        for m in re.finditer(r"^(\S+?):(\d+):\d+: (?:warning|error): code should be clang-formatted", out, re.M):
            path = os.path.relpath(m.group(1), root) if os.path.isabs(m.group(1)) else m.group(1)
            if not any(v[0] == path for v in found):
                found.append((path, int(m.group(2)), "layout: not as clang-format lays it out (clang-format -i FILE)"))
    return found


def mutant_violations(root, patches):
    """The mutation patches that no longer apply to the files under `root`."""
    found = []
    for path in patches:
        out = subprocess.run(["git", "apply", "--check", path], cwd=root, capture_output=True, text=True)
        if out.returncode != 0:
            first = (out.stderr.strip().splitlines() or ["git apply failed"])[0]
            found.append((path, 0, f"mutants: the patch no longer applies ({first}); re-make it against the code"))
    return found


def mutant_cases():
    """The mutants rule on a patch that applies and one whose context the file has moved past."""
    import tempfile
    patch = ("--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n")
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "p.patch"), "w") as f:
            f.write(patch)
        with open(os.path.join(d, "a.txt"), "w") as f:
            f.write("one\nTWO\n")
        bad = mutant_violations(d, ["p.patch"])
        with open(os.path.join(d, "a.txt"), "w") as f:
            f.write("one\ntwo\n")
        return bad, mutant_violations(d, ["p.patch"])


def check(root):
    table = read_dependency_table(root)
    violations = [] if table is not None else [("docs/DESIGN.md", 0, "includes: no ```deps table")]
    files = tracked(root)
    violations += layout_violations(root, [p for p in files if p.endswith(CPP_SUFFIXES) and not p.startswith("docs/")])
    violations += mutant_violations(root, [p for p in files if p.startswith("scripts/dev/mutants/") and p.endswith(".patch")])
    for path in files:
        violations += name_violations(path)
        if not is_prose(path) or path == "scripts/dev/tidy.py":  # its own patterns and planted cases
            continue
        try:
            text = open(os.path.join(root, path), encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        violations += process_word_violations(path, text)
        if path.endswith(CPP_SUFFIXES):
            if not path.startswith("docs/"):  # a standalone experiment a doc cites keeps its own layout
                violations += line_length_violations(path, text)
            if table is not None:
                violations += include_violations(path, text, table)
            if not path.startswith(PRODUCT_CPP_SKIP):
                violations += closed_set_violations(path, text)
    return violations


def layout_cases():
    """The layout rule on a planted file and on the same code laid out, in a folder of their own."""
    import shutil
    import tempfile
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(os.path.join(here, ".clang-format"), d)
        with open(os.path.join(d, "bad.cc"), "w") as f:
            f.write("int  f( int x ){return x;}\n")
        with open(os.path.join(d, "good.cc"), "w") as f:
            f.write("int f(int x) { return x; }\n")
        return layout_violations(d, ["bad.cc"]), layout_violations(d, ["good.cc"])


def self_test():
    """Each rule, proven to fire on a planted violation and to pass the same text without it."""
    table = {"sim": {"core"}, "core": set(), "verify": {"core", "engine/config.h"}, "scenario": {"core"},
             "scenario/fuzzer": {"core", "scenario"}}
    cases = [
        (process_word_violations("docs/x.md", "fixed in issue 24."), process_word_violations("docs/x.md", "vLLM #55745 fixed it.")),
        (process_word_violations("docs/x.md", "the ninth stop"), process_word_violations("docs/x.md", "a round trip; stop 351")),
        (process_word_violations("docs/x.md", "since ed6a767"), process_word_violations("docs/x.md", "hash 6bf9b0cad6f7b0a4")),
        (process_word_violations("docs/x.md", "when GPUs were lent"), process_word_violations("docs/x.md", "one GPU")),
        (name_violations("docs/evidence/issue24/a.txt"), name_violations("docs/evidence/sim-vs-h200/a.txt")),
        (include_violations("core/a.cc", '#include "sim/world.h"', table), include_violations("sim/a.cc", '#include "core/op.h"', table)),
        (include_violations("verify/a.cc", '#include "engine/scheduler.h"', table),
         include_violations("verify/a.cc", '#include "engine/config.h"', table)),
        # A folder inside another is a library of its own: its parent may not include it unless told.
        (include_violations("scenario/a.cc", '#include "scenario/fuzzer/space.h"', table),
         include_violations("scenario/fuzzer/a.cc", '#include "scenario/scenario.h"', table)),
        (closed_set_violations("tools/a.cc", 'if (h.kind == "serving") {'), closed_set_violations("tools/a.cc", "if (h.kind == k) {")),
        (closed_set_violations("sim/a.cc", '  f.kind = "unmatched";'), closed_set_violations("sim/a.cc", "  f.kind = core::FindingKind::unmatched;")),
        (closed_set_violations("serving/a.cc", 'f.summary.find("request")'), closed_set_violations("serving/a.cc", "f.request >= 0")),
        (line_length_violations("core/a.h", "x" * 121), line_length_violations("core/a.h", "x" * 120)),
        layout_cases(),
        mutant_cases(),
    ]
    failed = 0
    for i, (bad, good) in enumerate(cases):
        if not bad or good:
            print(f"tidy self-test {i}: planted violation found={bool(bad)}, clean text flagged={good}")
            failed += 1
    print(f"tidy self-test: {len(cases) - failed} of {len(cases)} rules proven both ways")
    return 1 if failed else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    violations = check(root)
    for path, n, why in sorted(violations):
        print(f"{path}:{n}: {why}")
    print(f"tidy: {len(violations)} violation(s)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
