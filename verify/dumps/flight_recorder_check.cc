#include "verify/dumps/flight_recorder_check.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/assert.h"
#include "core/error.h"
#include "core/finding_kinds.h"
#include "core/misalignment.h"
#include "verify/dumps/fr_job.h"
#include "verify/dumps/fr_streams.h"
#include "verify/dumps/fr_sequences.h"
#include "verify/dumps/fr_waits.h"

namespace ppspec::verify {
namespace {

core::Finding unchecked_ranks(const FrJob& job) {
  PPSPEC_ASSERT(!job.missing.empty());
  core::Finding n;
  n.verdict = core::Verdict::hazard;
  n.kind = core::FindingKind::unchecked_rank;
  n.time = core::kNoTime;
  n.summary = fmt::format(
      "no dump of {}, member(s) of groups in use: what {} did is not checked, and a rank that did not dump is "
      "often the one that hung",
      core::rank_list(std::vector<core::RankId>(job.missing.begin(), job.missing.end())),
      job.missing.size() == 1 ? "it" : "they");
  return n;
}

core::Finding dropped_records(const FrJob& job) {
  core::Finding n;
  n.verdict = core::Verdict::pass;
  n.kind = core::FindingKind::ring_buffer_wrapped;
  n.time = core::kNoTime;
  std::vector<std::string> parts;
  for (const auto& [rank, dropped] : job.dropped)
    if (dropped > 0) parts.push_back(fmt::format("rank {} dropped its first {}", rank, dropped));
  n.summary = fmt::format(
      "ring buffers wrapped ({}): what they dropped is not compared (where a ring still holds a "
      "completed call, what it dropped before completed long before); TORCH_FR_BUFFER_SIZE keeps more",
      fmt::join(parts, ", "));
  PPSPEC_ASSERT(!parts.empty(), "a note of wrapped ring buffers where none wrapped");
  return n;
}

core::Finding note(core::FindingKind kind, std::string summary) { return core::untimed_note(kind, std::move(summary)); }

// Where p2p places came from a wrapped ring's pattern, or could not.
void placing_notes(const FrJob& job, std::vector<core::Finding>& notes) {
  for (const FrP2pPlacing& p : job.placings) {
    const std::string group = job.groups[p.group].label();
    if (p.period == 0)
      notes.push_back(note(core::FindingKind::p2p_not_aligned,
                           fmt::format("rank {}'s ring dropped its p2p calls on {} before p2p_seq_id {}, and the calls "
                                       "it holds repeat no pattern: how many of the dropped ones went to each peer is "
                                       "unknown, so its p2p there is not compared",
                                       p.rank, group, p.first_seq)));
    else
      notes.push_back(note(core::FindingKind::p2p_aligned_by_pattern,
                           fmt::format("rank {}'s ring dropped its p2p calls on {} before p2p_seq_id {}: its "
                                       "calls there repeat every {} call(s), taken to have done so from the first",
                                       p.rank, group, p.first_seq, p.period)));
  }
}

// What dumps that record no progress, or groups read from the entries, leave unjudged.
void gloo_notes(const FrJob& job, std::vector<core::Finding>& notes) {
  if (!job.progress)
    notes.push_back(note(core::FindingKind::no_progress_recorded,
                         "the dumps record no progress (Gloo leaves every entry `scheduled`) and no p2p: the "
                         "order, sizes and dtypes of the collectives are judged; a hang, and any p2p, cannot be"));
  std::vector<std::string> inferred;
  for (const FrJobGroup& g : job.groups)
    if (g.inferred) inferred.push_back(fmt::format("{} [{}]", g.label(), fmt::join(g.ranks, ", ")));
  if (!inferred.empty())
    notes.push_back(note(core::FindingKind::groups_from_entries,
                         fmt::format("the dumps' group tables list no members (Gloo's): each group's members are "
                                     "the ranks whose dumps name it ({}); a member that never called on it is not seen",
                                     fmt::join(inferred, ", "))));
}

}  // namespace

core::RunResult check_flight_recorder(const std::vector<traces::FrDump>& dumps, const FrCheckOptions& options) {
  core::RunResult r;
  for (const traces::FrDump& d : dumps) r.stats.events += d.entries.size();
  if (r.stats.events == 0)
    throw core::InputError(
        dumps.empty() ? "" : dumps.front().file, 0,
        "no dump holds an entry: nothing to check (was the Flight Recorder on? TORCH_NCCL_TRACE_BUFFER_SIZE)");
  r.stats.ops_posted = r.stats.events;
  const FrJob job = make_job(dumps);
  FrSequenceFindings seq = check_sequences(job);
  FrWaitFindings waits = check_waits(job, options.calls);
  r.stats.pairs = seq.p2p_pairs;
  r.stats.collective_slots = seq.collectives_compared;
  // A misalignment explains what is left stuck after it; otherwise the waits name the cause.
  r.findings = seq.findings.empty() ? std::move(waits.findings) : std::move(seq.findings);
  for (auto& p : seq.unmatched_completed) r.findings.push_back(std::move(p.finding));
  for (core::Finding& f : r.findings) f.details.insert(f.details.end(), waits.frontiers.begin(), waits.frontiers.end());
  r.notes = std::move(seq.notes);
  for (core::Finding& n : waits.notes) r.notes.push_back(std::move(n));
  placing_notes(job, r.notes);
  gloo_notes(job, r.notes);
  if (job.progress)
    r.notes.push_back(note(core::FindingKind::execution_model, "assumed: " + fr_calls_words(options.calls)));
  if (std::any_of(job.dropped.begin(), job.dropped.end(), [](const auto& d) { return d.second > 0; }))
    r.notes.push_back(dropped_records(job));
  if (!job.missing.empty()) {
    core::Finding n = unchecked_ranks(job);
    if (r.findings.empty()) {
      n.details = waits.frontiers;
      r.findings.push_back(std::move(n));
    } else {
      r.notes.push_back(std::move(n));
    }
  }
  r.verdict = r.findings.empty() ? core::Verdict::pass : r.findings.front().verdict;
  const auto complete = [](const core::Finding& f) {
    return f.kind != core::FindingKind::none && !f.summary.empty() && f.verdict != core::Verdict::pass;
  };
  PPSPEC_ASSERT(std::all_of(r.findings.begin(), r.findings.end(), complete),
                "a Flight Recorder finding without its kind, summary or verdict");
  return r;
}

}  // namespace ppspec::verify
