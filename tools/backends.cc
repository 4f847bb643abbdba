#include "tools/backends.h"

#include "core/enum_names.h"

namespace ppspec::tools {

namespace {

constexpr core::EnumNames<RunBackend, 3> kRunBackends{
    {{{"sim", RunBackend::sim}, {"gpu", RunBackend::gpu}, {"both", RunBackend::both}}}};
constexpr core::EnumNames<FidelityBackend, 6> kFidelityBackends{{{{"sim", FidelityBackend::sim},
                                                                  {"both", FidelityBackend::both},
                                                                  {"recorded", FidelityBackend::recorded},
                                                                  {"flight-recorder", FidelityBackend::flight_recorder},
                                                                  {"nccl-profiler", FidelityBackend::nccl_profiler},
                                                                  {"import", FidelityBackend::import}}}};

}  // namespace

std::optional<RunBackend> parse_run_backend(std::string_view s) { return kRunBackends.parse(s); }
std::optional<FidelityBackend> parse_fidelity_backend(std::string_view s) { return kFidelityBackends.parse(s); }

}  // namespace ppspec::tools
