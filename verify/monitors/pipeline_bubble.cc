#include "verify/monitors/pipeline_bubble.h"

#include <fmt/format.h>

#include "core/finding_kinds.h"
#include "core/probes.h"

namespace ppspec::verify {

namespace {

// Steps kept after they were scheduled. A rank posts a step's feedback before the engine core can
// schedule pp steps past it (the step must return first, and every rank posts in step order), so
// a post for a step older than this is never met; a forgotten step is judged needed (no finding).
int64_t bubble_steps_kept(int pp) { return 8 * static_cast<int64_t>(pp) + 16; }

}  // namespace

void PipelineBubble::on_event(const core::Event& e) {
  switch (e.kind) {
    case core::EventKind::batch_scheduled: on_batch(e); return;
    case core::EventKind::request_scheduled: on_request(e); return;
    case core::EventKind::op_posted: on_posted(e); return;
    default: return;
  }
}

void PipelineBubble::on_batch(const core::Event& e) {
  Needs& n = steps_[e.step];
  n = Needs{core::BatchScheduledProbe::decode(e).request_ids.size(), {}, false};
  const int64_t kept = bubble_steps_kept(facts_.pp);
  while (!steps_.empty() && steps_.begin()->first < e.step - kept) steps_.erase(steps_.begin());
  PPSPEC_ASSERT(steps_.count(e.step) == 1 && steps_.begin()->first >= e.step - kept);
}

void PipelineBubble::on_request(const core::Event& e) {
  const auto it = steps_.find(e.step);
  if (it == steps_.end() || it->second.scheduled.size() >= it->second.rows) return;  // a batch this monitor did not see
  const auto p = core::RequestScheduledProbe::decode(e);
  Needs& n = it->second;
  n.scheduled.push_back(Row{e.req, p.num_computed, p.num_scheduled, p.prefill_len});
  // vLLM compute_need_sampled_mask: a row samples when this step reaches the end of its prefill.
  if (p.num_computed + p.num_scheduled >= p.prefill_len) n.samples = true;
  PPSPEC_ASSERT(n.scheduled.size() <= n.rows);
}

void PipelineBubble::on_posted(const core::Event& e) {
  if (!e.has_op || !facts_.has_role(e.comm, engine::CommRole::feedback)) return;
  const int64_t step = e.op.label.step;
  const auto it = steps_.find(step);
  // Judged only on the whole of what the step needed: every row's probe seen, none sampling.
  if (it == steps_.end() || it->second.samples || it->second.scheduled.size() != it->second.rows) return;
  report_bubble(e, step, it->second);
}

void PipelineBubble::report_bubble(const core::Event& e, int64_t step, const Needs& n) {
  const bool sends = e.op.kind == core::OpKind::broadcast && e.op.peer == e.rank;
  std::string ids;
  for (size_t i = 0; i < n.scheduled.size(); ++i)
    ids += fmt::format("{}{}", i == 0 ? "" : i + 1 == n.scheduled.size() ? " and " : ", ", n.scheduled[i].req);
  const std::string needs =
      n.rows == 0 ? std::string("the step schedules no request")
      : n.rows == 1
          ? fmt::format("the step's only request, {}, is a non-final prefill chunk: no row produces a sample", ids)
          : fmt::format("the step's {} requests, {}, are all non-final prefill chunks: no row produces a sample",
                        n.rows, ids);
  core::Finding f = finding_at(
      e, core::Verdict::pipeline_bubble, core::FindingKind::pipeline_bubble,
      fmt::format("rank{} (stage {}{}) {} feedback of engine step {} that no request of the step needs: {}; {}", e.rank,
                  facts_.stage_of(e.rank), facts_.last_stage(e.rank) ? ", the last" : "", sends ? "sends" : "waits for",
                  step, core::describe(e.op), needs));
  f.engine_step = step;
  for (size_t i = 0; i < n.scheduled.size() && i < core::kFindingListMax; ++i) {
    const Row& r = n.scheduled[i];
    f.details.push_back(
        fmt::format("request {}: prefill tokens [{}, {}) of {}, a non-final chunk: its sample is discarded", r.req,
                    r.num_computed, r.num_computed + r.num_scheduled, r.prefill_len));
  }
  if (n.scheduled.size() > core::kFindingListMax)
    f.details.push_back(fmt::format("… and {} more", n.scheduled.size() - core::kFindingListMax));
  f.details.push_back(
      fmt::format("nothing of it is adopted, yet the earlier stages wait for its receive as for any feedback, and it "
                  "completes only "
                  "once the last stage has run step {}: the next chunks wait for this one to traverse every stage "
                  "(vLLM #38726: skip "
                  "the broadcast, and its receives, when every scheduled request is a non-final chunk)",
                  step));
  f.sites.push_back(core::Site{e.rank, std::string(e.actor), std::string(e.comm), e.cseq, core::describe(e.op), ""});
  f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.host", e.rank), "", -1, "need_sampled_mask", ""});
  report(std::move(f));
}

}  // namespace ppspec::verify
