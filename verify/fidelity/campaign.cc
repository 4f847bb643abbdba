#include "verify/fidelity/campaign.h"

#include "core/rng.h"
#include "program/toml_writer.h"

namespace ppspec::fidelity {

GeneratedCase generate_shape_case(
    const std::string& out, const std::string& prefix, uint64_t seed, uint64_t index,
    const std::function<generator::GeneratedProgram(uint64_t, const std::string&)>& make) {
  namespace fs = std::filesystem;
  GeneratedCase c;
  c.name = fmt::format("{}-s{}-{:04}", prefix, seed, index);
  c.program = make(core::derive_seed(seed, index), c.name);
  const fs::path dir = fs::path(out) / "cases" / c.name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  c.file = (dir / (c.name + ".toml")).string();
  c.program.program.file = c.file;
  std::ofstream(c.file) << program::to_toml(c.program.program);
  return c;
}

GeneratedCase generate_case(const std::string& out, const std::string& prefix, uint64_t seed, uint64_t index,
                            const std::function<generator::GeneratorOptions(generator::Disturbance)>& options) {
  constexpr auto kinds = std::size(generator::kHardwareDisturbances);
  const generator::Disturbance kind = generator::kHardwareDisturbances[index % kinds];
  GeneratedCase c = generate_shape_case(out, prefix, seed, index, [&](uint64_t derived, const std::string& name) {
    return generator::generate_program(derived, name, options(kind));
  });
  c.kind = kind;
  return c;
}

}  // namespace ppspec::fidelity
