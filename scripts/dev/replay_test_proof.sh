#!/usr/bin/env bash
# Proves the asan preset's fuzz-corpus replay tests fail when a fuzz target misbehaves: in a fresh
# clone, plants a heap read one past a copy of every input into libfuzzer/fuzz_scenario.cc, builds
# that target under ASan, and runs ctest's libfuzzer_replay_fuzz_scenario (expected: Failed, naming
# the input and ASan's report); then the same test without the plant (expected: Passed).
# Writes OUT (default docs/evidence/fuzz-corpus-replay/replay-test-proof.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/evidence/fuzz-corpus-replay/replay-test-proof.txt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q . "$work/clone"
cd "$work/clone"
python3 - <<'PY'
p = 'libfuzzer/fuzz_scenario.cc'
s = open(p).read()
head = 'extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {\n'
plant = ('  if (size > 0) { std::vector<uint8_t> copy(data, data + size); '
         'volatile uint8_t past = copy.data()[size]; (void)past; }  // planted\n')
assert head in s
open(p, 'w').write('#include <vector>\n' + s.replace(head, head + plant))
PY
run() {
  cmake --build build/asan --target fuzz_scenario > build.log 2>&1 || { tail -20 build.log; exit 1; }
  ctest --preset asan -R '^libfuzzer_replay_fuzz_scenario$' --output-on-failure 2>&1 |
    grep -E 'Test #|Running:|ERROR: AddressSanitizer|SUMMARY|tests passed' | head -n 6 || true
}
{
  echo "# scripts/dev/replay_test_proof.sh on $(git rev-parse --short HEAD) ($(date -u +%Y-%m-%dT%H:%MZ))"
  cmake --preset asan > configure.log 2>&1
  echo "## planted: a heap read one past a copy of each input in libfuzzer/fuzz_scenario.cc"
  run
  git checkout -q libfuzzer/fuzz_scenario.cc
  echo "## without the plant"
  run
} > "$work/out.txt"
cd - > /dev/null
cp "$work/out.txt" "$out"
cat "$out"
