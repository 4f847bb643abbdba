// What the differential campaigns of verify/fidelity/ (the Flight Recorder one, the NCCL profiler one) do
// alike: generate case i's disturbed program into OUT/cases/NAME/, and run every case keeping the
// programs, each disagreement's files and a summary, with a progress line per hundred.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "scenario/generator/disturb.h"
#include "scenario/generator/seeded.h"

namespace ppspec::fidelity {

struct GeneratedCase {
  std::string name, file;  // file: OUT/cases/NAME/NAME.toml
  generator::Disturbance kind = generator::Disturbance::drop;
  std::string kind_name;  // where a family names its own ("none" for an undisturbed program)
  generator::GeneratedProgram program;
};

// Case `index` of `seed`: named PREFIX-sSEED-INDEX, its disturbance cycling through the hardware's,
// generated with `options(kind)` and written as a scenario file.
GeneratedCase generate_case(const std::string& out, const std::string& prefix, uint64_t seed, uint64_t index,
                            const std::function<generator::GeneratorOptions(generator::Disturbance)>& options);

// Case `index` of `seed` made by `make(seed of the case, name)`: named PREFIX-sSEED-INDEX and written
// as a scenario file.
GeneratedCase generate_shape_case(const std::string& out, const std::string& prefix, uint64_t seed, uint64_t index,
                                  const std::function<generator::GeneratedProgram(uint64_t, const std::string&)>& make);

// Runs cases 0..count-1 (`run(i)`; a Case has `name`, `agree`, `why`): keeps each program under
// OUT/programs/, moves each disagreement's folder to OUT/disagreements/NAME/ with why.json,
// writes OUT/summary.json, and says DISAGREE and the progress on `out`.
template <class Case>
std::vector<Case> run_cases(const std::string& out_dir, uint64_t count, const std::function<Case(uint64_t)>& run,
                            const std::function<nlohmann::json(const Case&)>& to_json, std::ostream& out) {
  namespace fs = std::filesystem;
  const fs::path dir(out_dir);
  fs::create_directories(dir / "disagreements");
  fs::create_directories(dir / "programs");
  std::vector<Case> cases;
  nlohmann::json all = nlohmann::json::array();
  size_t agree = 0;
  for (uint64_t i = 0; i < count; ++i) {
    Case c = run(i);
    const fs::path kept = dir / "cases" / c.name;
    fs::copy_file(kept / (c.name + ".toml"), dir / "programs" / (c.name + ".toml"),
                  fs::copy_options::overwrite_existing);
    if (c.agree) {
      ++agree;
      fs::remove_all(kept);
    } else {
      fs::remove_all(dir / "disagreements" / c.name);
      fs::rename(kept, dir / "disagreements" / c.name);
      std::ofstream(dir / "disagreements" / c.name / "why.json") << to_json(c).dump(1) << '\n';
      out << fmt::format("DISAGREE {}: {}\n", c.name, c.why);
    }
    all.push_back(to_json(c));
    cases.push_back(std::move(c));
    if ((i + 1) % 100 == 0 || i + 1 == count)
      out << fmt::format("[{}/{}] {} agree\n", i + 1, count, agree) << std::flush;
  }
  fs::remove_all(dir / "cases");
  std::ofstream(dir / "summary.json") << all.dump(1) << '\n';
  return cases;
}

}  // namespace ppspec::fidelity
