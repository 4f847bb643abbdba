#include "traces/trace_format.h"

#include "core/enum_names.h"

namespace ppspec::traces {

namespace {

constexpr core::EnumNames<TraceBackend, 3> kBackendNames{
    {{{"sim", TraceBackend::sim}, {"gpu", TraceBackend::gpu}, {"nccl-profiler", TraceBackend::nccl_profiler}}}};

}  // namespace

std::string_view to_string(TraceBackend b) { return kBackendNames.name(b); }
std::optional<TraceBackend> parse_trace_backend(std::string_view s) { return kBackendNames.parse(s); }

}  // namespace ppspec::traces
