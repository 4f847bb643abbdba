#!/usr/bin/env bash
# Mutation-score campaign: scripts/dev/mutants/README.md says what the mutants are and how
# to read the table.
#
#   scripts/dev/mutants/run.sh [--build-dir DIR] [--jobs N] [--out FILE] [--no-first-wrong] [PATCH...]
#
# For each patch (default: every scripts/dev/mutants/*.patch): apply it to a scratch copy of the tree
# (DIR/src, default build/mutant/src), build ppspec there (nice -n 19), run every scenario of
# scenarios/serving/ and scenarios/regressions/ with `ppspec run --json`, decide killed/survived, and
# locate the first engine step whose probe events differ from the unmutated run; then `git apply -R`
# (also on failure or Ctrl-C). The unmutated binary and its results are cached per source-tree hash
# under DIR/baseline/. Writes the markdown table (scripts/dev/mutants/results.md for a full campaign) and
# prints it. Exit status: 0 every mutant killed, 1 some mutant survived, 2 a patch did not apply or
# build (or the unmutated tree does not build), 130 interrupted.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec python3 "$here/campaign.py" "$@"
