#include "verify/monitors/embedding_checker.h"

#include <fmt/format.h>

#include "core/finding_kinds.h"
#include "core/probes.h"

namespace ppspec::verify {

void EmbeddingChecker::on_event(const core::Event& e) {
  if (reported(core::FindingKind::embedding) || e.kind != core::EventKind::table_bound) return;
  const auto bound = core::TableBoundProbe::decode(e);
  if (bound.table != core::WeightTable::draft_embed_tokens) return;
  const int64_t entries = bound.entries;
  const int64_t unwritten = bound.unwritten;
  if (bound.hash == facts_.draft_table_hash && entries == facts_.draft_table_entries && unwritten == 0) return;
  core::Finding f = finding_at(
      e, core::Verdict::embedding_violation, core::FindingKind::embedding,
      fmt::format("rank{} (stage {}) drafts with an embedding table that is not the checkpoint's: hash {:#x}, expected "
                  "{:#x}; {} of its {} entries were never written on this rank",
                  e.rank, facts_.stage_of(e.rank), bound.hash, facts_.draft_table_hash, unwritten, entries));
  f.sites.push_back(
      core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                 fmt::format("draft_forward at engine step {}: first use of the drafter's embedding", e.step), ""});
  if (unwritten > 0 && facts_.pp > 1)
    f.details.push_back(
        "under pp > 1 the target's embedding lives on stage 0 only: the drafter on the last stage must "
        "load its own copy from the checkpoint, not alias the target's");
  report(std::move(f));
}

}  // namespace ppspec::verify
