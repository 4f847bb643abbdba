#!/usr/bin/env bash
# Where a command's instructions go, by function, counted by valgrind's callgrind (counts do not
# drift with the machine's speed): the program's total, then for each FUNCTION (an exact name as
# callgrind_annotate prints it, without the parameter list) the instructions of its calls
# (inclusive) and of its own code (self), as shares of the total.
#   scripts/dev/instruction_shares.sh FUNCTION... -- COMMAND...
# Inclusive counts hold as long as the function's calls return on the stack that made them: the
# simulator's fibers switch stacks below World::run, so name functions above it (the run, an
# oracle's reference run) or functions that never switch fibers (the race detector's), not the
# frames a switch crosses. A FUNCTION that matches nothing is an error (a misspelt name). Nor do
# they hold in a binary that links mimalloc (PPSPEC_ALLOCATOR, the default preset's): callgrind
# pairs its entry points' calls and returns wrongly (a fuzz campaign's run_on_sim came out at 2 %
# of the campaign), so there only self counts are printed; configure with -DPPSPEC_ALLOCATOR=system
# for inclusive ones.
set -euo pipefail
functions=()
while (($#)) && [[ $1 != -- ]]; do functions+=("$1"); shift; done
(($# >= 2)) || { echo "usage: scripts/dev/instruction_shares.sh FUNCTION... -- COMMAND..." >&2; exit 2; }
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$work/out" "$@" > /dev/null 2> "$work/log" || {
  echo "scripts/dev/instruction_shares.sh: the command failed under callgrind:" >&2; tail -5 "$work/log" >&2; exit 1; }
callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$work/out" > "$work/inclusive.txt"
# The profile itself says whether mimalloc ran (linked, preloaded, or behind a wrapper command).
inclusive_valid=1
if grep -q libmimalloc "$work/self.txt"; then inclusive_valid=0; fi
callgrind_annotate --auto=no --threshold=100 "$work/out" > "$work/self.txt"
python3 - "$work/inclusive.txt" "$work/self.txt" "$inclusive_valid" "$*" \
  ${functions[@]+"${functions[@]}"} <<'PYEOF'
import re, sys
inclusive_path, self_path, inclusive_valid, command, names = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4], sys.argv[5:]
def load(path):
    total, rows = 0, []
    for line in open(path):
        m = re.match(r"\s*([\d,]+) .*PROGRAM TOTALS", line)
        if m: total = int(m.group(1).replace(",", ""))
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+[^:]*:(.*)$", line)
        if m and ")'" not in m.group(2):  # callgrind's recursion copies ('2) are counted in the first
            rows.append((m.group(2), int(m.group(1).replace(",", ""))))
    return total, rows
total, inclusive = load(inclusive_path)
_, own = load(self_path)
def of(rows, name, combine):
    # A function has a line per source file its code came from (its own, headers inlined into it):
    # self counts add up over them; each inclusive line is the whole function's, so the largest.
    out = 0
    for fn, n in rows:
        if fn.startswith(name + "("): out = combine(out, n)
    return out
print(f"# scripts/dev/instruction_shares.sh: {command}")
print(f"total: {total:,} instructions")
missing = [n for n in names if not any(fn.startswith(n + "(") for fn, _ in inclusive)]
if missing:
    sys.exit("scripts/dev/instruction_shares.sh: no function named " + ", ".join(missing))
for n in names:
    incl, mine = of(inclusive, n, max), of(own, n, lambda a, b: a + b)
    shown = f"inclusive {incl:,} ({100 * incl / total:.1f} %)" if inclusive_valid else "inclusive n/a (mimalloc)"
    print(f"{n}: {shown}, self {mine:,} ({100 * mine / total:.1f} %)")
PYEOF
