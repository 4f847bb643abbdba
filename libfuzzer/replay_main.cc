// Replays inputs through a fuzz target without libFuzzer. gcc has no libFuzzer, so the ASan preset
// links each target with this main instead, and ctest replays the checked-in corpus and findings
// under ASan and UBSan (libfuzzer/CMakeLists.txt): the regression half of fuzzing, on every CI run.
// Fuzzing proper (new inputs, coverage-guided) is scripts/dev/libfuzzer.sh with the fuzz preset (clang).
// Each input once, in order, as libFuzzer replays files: "Running: FILE" names the input before it
// runs, so a crash or a sanitizer report that ends the process is attributed.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s INPUT...  (replays each file once through the fuzz target)\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read the input %s\n", argv[0], argv[i]);
      return 2;
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "Running: %s (%zu bytes)\n", argv[i], bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::fprintf(stderr, "%s: replayed %d inputs\n", argv[0], argc - 1);
  return 0;
}
