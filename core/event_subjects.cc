#include "core/event_subjects.h"

#include "core/enum_names.h"

namespace ppspec::core {
namespace {

// The names are the trace's: a rename here breaks reading older traces.
constexpr EnumNames<WarmupPhase, 6> kPhases{{{
    {"feedback disabled", WarmupPhase::feedback_disabled},
    {"preload registered kernels", WarmupPhase::preload_registered_kernels},
    {"warmup_pp_decode_update", WarmupPhase::warmup_pp_decode_update},
    {"capture graphs", WarmupPhase::capture_graphs},
    {"feedback enabled", WarmupPhase::feedback_enabled},
    {"serving", WarmupPhase::serving},
}}};
constexpr EnumNames<PaddingKernel, 3> kPaddingKernels{{{
    {"prepare_inputs", PaddingKernel::prepare_inputs},
    {"prepare_dflash_inputs", PaddingKernel::prepare_dflash_inputs},
    {"topk_softplus_sqrt", PaddingKernel::topk_softplus_sqrt},
}}};
constexpr EnumNames<WeightTable, 1> kTables{{{{"draft.embed_tokens", WeightTable::draft_embed_tokens}}}};
constexpr EnumNames<StepKind, 2> kStepKinds{{{{"", StepKind::serving}, {"warmup", StepKind::warmup}}}};
constexpr EnumNames<Release, 3> kReleases{{{
    {"finished", Release::finished},
    {"aborted", Release::aborted},
    {"preempted", Release::preempted},
}}};
constexpr EnumNames<KvWriter, 3> kKvWriters{{{
    {"target", KvWriter::target},
    {"draft context", KvWriter::draft_context},
    {"draft query", KvWriter::draft_query},
}}};

}  // namespace

std::string_view to_string(WarmupPhase p) { return p == WarmupPhase::none ? "" : kPhases.name(p); }
std::string_view to_string(PaddingKernel k) { return k == PaddingKernel::none ? "" : kPaddingKernels.name(k); }
std::string_view to_string(WeightTable t) { return t == WeightTable::none ? "" : kTables.name(t); }
std::string_view to_string(StepKind s) { return kStepKinds.name(s); }
std::optional<WarmupPhase> parse_warmup_phase(std::string_view s) { return kPhases.parse(s); }
std::optional<PaddingKernel> parse_padding_kernel(std::string_view s) { return kPaddingKernels.parse(s); }
std::optional<WeightTable> parse_weight_table(std::string_view s) { return kTables.parse(s); }
std::optional<StepKind> parse_step_kind(std::string_view s) { return kStepKinds.parse(s); }
std::string_view to_string(Release r) { return r == Release::none ? "" : kReleases.name(r); }
std::string_view to_string(KvPart p) {
  switch (p) {
    case KvPart::context: return "context lane";
    case KvPart::layer: return "layer";
    case KvPart::draft: return "drafter";
  }
  return "?";
}

std::string_view to_string(KvWriter w) { return w == KvWriter::none ? "" : kKvWriters.name(w); }
std::optional<Release> parse_release(std::string_view s) { return kReleases.parse(s); }
std::optional<KvWriter> parse_kv_writer(std::string_view s) { return kKvWriters.parse(s); }
std::string release_names() { return kReleases.list(); }
std::string kv_writer_names() { return kKvWriters.list(); }
std::string warmup_phase_names() { return kPhases.list(); }
std::string padding_kernel_names() { return kPaddingKernels.list(); }
std::string weight_table_names() { return kTables.list(); }

}  // namespace ppspec::core
