// The step of a worker: execute_model, then sample_tokens, in the order of DESIGN §6.2.
#include <algorithm>
#include <fmt/format.h>

#include "engine/readback.h"
#include "engine/span_of.h"
#include "engine/worker.h"
#include "kernels/feedback_payload.h"
#include "kernels/post_update.h"
#include "core/call_site.h"
#include "core/hash.h"
#include "kernels/request_tables.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

void Worker::step(const SchedulerOutput& so) {
  // Reports of what the host does from here (a module load, a blocking call) name the step.
  // The runtime keeps a view of the text in what it records: keep every one alive with the worker.
  ctx_.rt.set_call_site(call_sites_.emplace_back(core::step_call_site(so.step)), so.step);
  // The host reads the previous step's accepted counts before anything of this step runs.
  if (accepted_) accepted_->read(so.step);
  // 1. Earlier stages adopt the feedback of step T-pp (the deferred update).
  if (!ctx_.last && pp_handler_) deferred_update();
  // 2. Finished and new requests, block tables; then the batch, decode rows first (the scheduler
  // orders it).
  for (int32_t idx : so.finished)
    if (pp_handler_) pp_handler_->on_req_idx_freed(idx);
  // synchronize_input_prep around _update_states and _prepare_inputs' uploads (engine/input_staging.h);
  // vLLM #25279's defect enters it only after the request tables were updated.
  const bool late_sync = ctx_.cfg.faults.input_prep_sync_after_states;
  if (!late_sync) staging_.begin();
  tables_.admit(so);
  if (late_sync) staging_.begin();
  model_.recurrent().reset(so);
  tables_.commit(so);
  inputs_.upload_batch(so);
  staging_.end();
  if (so.num_tokens == 0 && !so.dp_dummy) {
    // An idle step keeps the PP cadence: every rank takes it, nothing runs, nothing is posted.
    return_idle_output(so);
    return;
  }
  // 3. Inputs from this rank's own tables, padded to the graph's size (and under DP to the
  // replicas' largest step).
  const int32_t padded = graph_size(rows_across_replicas(so));
  inputs_.prepare(so, padded, tables_, check_);
  if (so.dp_dummy) {
    dummy_batch(so, padded);
    return;
  }
  // 4. Activations in, own layers, activations out.
  if (!ctx_.first) exchange_activations(so, padded, true);
  forward(padded, so.step);
  if (ctx_.observed()) probe_stage_output(so);
  // EAGLE's taps from stages two or more hops before the last, straight to it (engine/eagle_taps.h).
  const bool far_taps = taps_ && pp_comm_ != nullptr;
  if (far_taps) taps_->exchange_far(*pp_comm_, so.step, padded, true);
  if (!ctx_.last) exchange_activations(so, padded, false);
  if (far_taps) taps_->exchange_far(*pp_comm_, so.step, padded, false);
  // 5. sample_tokens: the last stage samples, drafts and sends the feedback; earlier stages post
  // this step's feedback receives (adopted pp steps later) and advance optimistically by the whole
  // query (the deferred update subtracts the rejected drafts).
  if (ctx_.last) {
    sample_last_stage(so);
  } else {
    if (pp_handler_) pp_handler_->receive(so);
    ctx_.run("advance_num_computed", "",
             kn::AdvanceNumComputedKernel{span_of<int32_t>(inputs_.idx_mapping), span_of<int32_t>(inputs_.query_len),
                                          span_of<int32_t>(tables_.num_computed)},
             static_cast<int64_t>(so.requests.size()));
    // The recurrent state advances with it, to the block's last row; the deferred update commits
    // the accepted length's once the feedback tells it.
    model_.recurrent().commit(inputs_.idx_mapping, static_cast<int32_t>(so.requests.size()), tables_.num_computed);
  }
}

void Worker::return_idle_output(const SchedulerOutput& so) {
  if (pp_handler_ && !ctx_.last) pp_handler_->receive(so);
  if (ctx_.last && ctx_.tp_rank == 0) ctx_.rt.channel(ctx_.outputs).send(ModelOutput{so.step, ctx_.rt.now(), {}, 0});
}

int32_t Worker::rows_across_replicas(const SchedulerOutput& so) {
  return dp_ ? dp_->max_rows(so.num_tokens, so.step, DataParallel::Forward::target) : so.num_tokens;
}

void Worker::dummy_batch(const SchedulerOutput& so, int32_t padded) {
  PPSPEC_ASSERT(dp_ && so.requests.empty() && padded > 0, "a dummy batch of {} rows for {} requests at dp = {}", padded,
                so.requests.size(), ctx_.dp);
  forward(padded, so.step);
  const Faults& f = ctx_.cfg.faults;
  // vLLM's _dummy_run calls the speculator's propose in its dummy mode (#35294), with as many
  // forwards as propose runs (#26217).
  if (drafter_ && !so.dummy && !f.dummy_run_skips_drafter)
    drafter_->dummy_propose(so.step, f.dummy_run_one_forward ? 1 : ctx_.cfg.draft_forwards());
  if (ctx_.last && ctx_.tp_rank != 0) ctx_.dev.stream_sync(ctx_.main);
  return_idle_output(so);
}

void Worker::deferred_update() {
  std::optional<PrevOutputs> prev = pp_handler_->get_prev_sampled_outputs();
  if (!prev) return;
  const int32_t n = prev->rows;
  const int k = ctx_.k;
  ctx_.upload(prev_idx_, prev->idx_mapping);
  FeedbackBuffers& slot = *prev->slot;
  if (ctx_.cfg.spec.feedback == Feedback::single_payload)
    ctx_.run("unpack_payload", "",
             kn::UnpackPayloadKernel{n, k, span_of<int64_t>(slot.payload), span_of<int64_t>(slot.sampled),
                                     span_of<int32_t>(slot.counts), span_of<int64_t>(slot.drafts)},
             n);
  kn::PostUpdateKernel pk{span_of<int32_t>(prev_idx_),
                          span_of<int64_t>(slot.sampled),
                          span_of<int32_t>(slot.counts),
                          span_of<int32_t>(slot.counts).sub(n, n),
                          span_of<int32_t>(prev_query_len_),
                          prev->has_drafts ? span_of<int64_t>(slot.drafts) : kn::Span<int64_t>(),
                          k,
                          true,
                          span_of<int64_t>(tables_.last_sampled),
                          span_of<int32_t>(tables_.num_computed),
                          span_of<int32_t>(tables_.total_len),
                          span_of<int64_t>(tables_.draft_tokens)};
  ctx_.run("post_update", "deferred", kn::DeferredPostUpdateKernel{pk}, n);
  // The recurrent state rolled back to the accepted length (the state after num_computed tokens,
  // now corrected). `rollback_last_stage_only` (SGLang #40001): only the last stage rolls back;
  // this stage keeps the state after the whole block it ran.
  if (!ctx_.cfg.faults.rollback_last_stage_only) model_.recurrent().commit(prev_idx_, n, tables_.num_computed);
  if (ctx_.observed()) probe_adopted(std::move(*prev));
}

void Worker::probe_adopted(PrevOutputs p) {
  // What the update read from the slot (sampled tokens, counts), and what it left in each adopted
  // request's rows of the tables, read back after the kernel (the bonus token, the drafts): a row
  // written with another request's or another step's feedback shows as such, whatever the slot held.
  const int32_t n = p.rows;
  const FeedbackBuffers& slot = *p.slot;
  std::vector<core::Buffer> read = {slot.sampled.rows(0, n), counts_view(slot, n), tables_.last_sampled};
  if (p.has_drafts) read.push_back(tables_.draft_tokens);
  read_back(
      ctx_.dev, ctx_.main, read, [&rt = ctx_.rt, rank = ctx_.rank, k = ctx_.k, p = std::move(p)](const HostRows& h) {
        // The whole table first: where the writes landed, for a row that did not get its own.
        publish(rt, Probe{rank, p.step, -1}, core::TableUpdatedProbe{h.get<int64_t>(2)});
        for (int32_t r = 0; r < p.rows; ++r) {
          const int32_t idx = p.idx_mapping[static_cast<size_t>(r)];
          if (idx < 0) continue;
          const int64_t req = p.req_ids[static_cast<size_t>(r)];
          const int32_t sampled = std::clamp(h.at<int32_t>(1, r), 0, k + 1);
          const auto tokens = h.get<int64_t>(0).subspan(static_cast<size_t>(r * (k + 1)), static_cast<size_t>(sampled));
          const Probe at{rank, p.step, req};
          publish(rt, at, core::FeedbackAdoptedProbe{idx, h.at<int32_t>(1, r), h.at<int32_t>(1, p.rows + r), tokens});
          publish(rt, at, core::BonusAdoptedProbe{idx, h.at<int64_t>(2, idx)});
          if (!p.has_drafts) continue;
          const auto d =
              h.get<int64_t>(3).subspan(static_cast<size_t>(idx) * static_cast<size_t>(k), static_cast<size_t>(k));
          publish(rt, at, core::DraftsProbe{core::EventKind::drafts_adopted, d});
        }
      });
}

void Worker::probe_stage_output(const SchedulerOutput& so) {
  // The activations this stage computed, as they are in the buffers it sends on (or samples from):
  // per request row its position, its context lane and a digest of this shard's deep lanes.
  const int32_t used = so.num_tokens;
  std::vector<int64_t> ids;
  std::vector<int32_t> starts{0};
  for (const auto& r : so.requests) {
    ids.push_back(r.id);
    starts.push_back(starts.back() + r.num_tokens);
  }
  const int64_t layers_done = model_.layers().last;
  read_back(ctx_.dev, ctx_.main,
            {inputs_.positions.rows(0, used), model_.ctx.rows(0, used), model_.hidden.rows(0, used)},
            [&rt = ctx_.rt, rank = ctx_.rank, step = so.step, ids = std::move(ids), starts = std::move(starts),
             layers_done, lane_begin = ctx_.lane_begin, lanes = ctx_.lane_count](const HostRows& h) {
              const auto hidden = h.get<uint32_t>(2);
              for (size_t r = 0; r < ids.size(); ++r) {
                std::vector<int64_t> rows;
                for (int32_t i = starts[r]; i < starts[r + 1]; ++i) {
                  const uint32_t* row = hidden.data() + static_cast<size_t>(i) * static_cast<size_t>(lanes);
                  core::StageOutputRow{h.at<int64_t>(0, i), h.at<uint32_t>(1, i),
                                       static_cast<int64_t>(core::fnv1a_words(row, static_cast<size_t>(lanes)))}
                      .append_to(rows);
                }
                publish(rt, Probe{rank, step, ids[r]}, core::StageOutputProbe{layers_done, lane_begin, lanes, rows});
              }
            });
}

void Worker::exchange_activations(const SchedulerOutput& so, int32_t rows, bool receive) {
  ctx_.rt.group_start();
  if (receive) {
    pp_comm_->recv(model_.ctx.rows(0, rows), ctx_.stage - 1, ctx_.main, core::Label{"act.ctx", so.step});
    pp_comm_->recv(model_.hidden.rows(0, rows), ctx_.stage - 1, ctx_.main, core::Label{"act.hidden", so.step});
    if (taps_) taps_->recv_with_activations(*pp_comm_, so.step, rows);
  } else {
    pp_comm_->send(model_.ctx.rows(0, rows), ctx_.stage + 1, ctx_.main, core::Label{"act.ctx", so.step});
    pp_comm_->send(model_.hidden.rows(0, rows), ctx_.stage + 1, ctx_.main, core::Label{"act.hidden", so.step});
    if (taps_) taps_->send_with_activations(*pp_comm_, so.step, rows);
  }
  ctx_.rt.group_end();
}

void Worker::forward(int32_t rows, int64_t step) {
  const auto graph = graphs_.find(rows);
  if (graph != graphs_.end()) {
    ctx_.dev.graph_launch(graph->second, ctx_.main);  // R10: the graph reads all its captured rows
    // A replay digests what its capture did.
    if (taps_ && ctx_.observed()) taps_->publish(step, graph_taps_.at(rows));
    return;
  }
  model_.forward(rows, inputs_, tables_, tp());
  if (!taps_) return;
  // Taken every forward, observed or not: what a forward digested is its own, never the next's.
  const std::vector<int64_t> digested = taps_->take_digested();
  if (ctx_.observed()) taps_->publish(step, digested);
}

void Worker::sample_last_stage(const SchedulerOutput& so) {
  // pp = 1: no feedback; the sampler's outputs live in buffers of their own.
  FeedbackBuffers& slot = pp_handler_ ? pp_handler_->last_stage_slot(so.step) : own_slot_;
  const SampledRows sampled = sampler_->sample(so, slot, tables_, inputs_, model_);
  if (accepted_) accepted_->issue(so, slot);
  // Messages 1 and 2 of the feedback, right after sampling.
  if (pp_handler_) pp_handler_->broadcast(so, slot, !sampled.any_drafts);
  sampler_->post_update(so, slot, tables_, inputs_);
  // The recurrent state at the accepted length: post_update has just counted it.
  model_.recurrent().commit(inputs_.idx_mapping, static_cast<int32_t>(so.requests.size()), tables_.num_computed);
  int drafted = 0;
  const bool drafts = drafter_ && !so.dummy && !sampled.rows.empty();
  const int32_t budget = decide_draft_budget(so, drafts);
  if (drafts)
    drafted = drafter_->propose(so, sampled.rows, slot, tables_, inputs_, model_, check_,
                                graph_size(static_cast<int32_t>(sampled.rows.size()) * budget), budget);
  else if (dp_ && drafter_ && !so.dummy)
    // Under DP a step with nothing to draft still runs the drafter's forwards, with their collectives.
    drafter_->dummy_propose(so.step, ctx_.cfg.draft_forwards());
  if (draft_budget_ && drafted > 0) draft_budget_->observe(drafter_->confidence_fixed(), drafted, budget);
  relay_drafts(so, slot, drafted);
  send_output(so, slot, sampled.rows, budget);
}

// K, or with an adaptive budget this step's (every TP rank of the stage decides for the same steps:
// those whose requests draft).
int32_t Worker::decide_draft_budget(const SchedulerOutput& so, bool drafts) {
  if (!draft_budget_ || !drafts) return ctx_.k;
  const int32_t budget = draft_budget_->decide(so.step, tp());
  drafter_->note_estimate(draft_budget_->estimate());
  return budget;
}

void Worker::relay_drafts(const SchedulerOutput& so, FeedbackBuffers& slot, int drafted) {
  if (!pp_handler_) return;
  const bool single = ctx_.cfg.spec.feedback == Feedback::single_payload;
  // A step that sampled nothing proposed nothing; its drafts message goes only where the gate
  // posts that step's feedback all the same (the feedback_for_nonfinal_chunks fault).
  if (drafted > 0 || single || ctx_.k == 0 || pp_handler_->posts_without_samples(so)) {
    if (single)
      ctx_.run("pack_payload", "",
               kn::PackPayloadKernel{static_cast<int32_t>(so.requests.size()), ctx_.k, drafted > 0,
                                     span_of<int64_t>(slot.sampled), span_of<int32_t>(slot.counts),
                                     span_of<int64_t>(slot.drafts), span_of<int64_t>(slot.payload)},
               static_cast<int64_t>(so.requests.size()));
    pp_handler_->broadcast_drafts(so, slot);
  }
  // The second call site, beside set_draft_tokens() (#50514): it relays drafts that a speculator-less
  // path wrote. This engine has no such path, and the seed PR gates the site out whenever the
  // speculator ran; the merge that kept it ungated (vLLM commit 5b572da027) posted every step's drafts twice.
  const bool speculator_ran = drafted > 0;
  if (speculator_ran && ctx_.cfg.faults.double_post_drafts) pp_handler_->broadcast_drafts(so, slot);
}

void Worker::send_output(const SchedulerOutput& so, FeedbackBuffers& slot, const std::vector<int32_t>& draft_rows,
                         int32_t budget) {
  if (ctx_.tp_rank != 0) {
    ctx_.dev.stream_sync(ctx_.main);
    return;
  }
  const auto n = static_cast<int64_t>(so.requests.size());
  const int width = ctx_.k + 1;
  host_sampled_.resize(static_cast<size_t>(n * width));
  host_counts_.resize(static_cast<size_t>(2 * n));
  host_inputs_.resize(static_cast<size_t>(so.num_tokens));
  ctx_.dev.download(ctx_.main, host_sampled_.data(), slot.sampled.rows(0, n));
  ctx_.dev.download(ctx_.main, host_counts_.data(), counts_view(slot, n));
  ctx_.dev.download(ctx_.main, host_inputs_.data(), inputs_.input_ids.rows(0, so.num_tokens));
  const bool drafted = ctx_.k > 0 && !so.dummy && !draft_rows.empty();
  if (drafted) {
    host_drafts_.resize(static_cast<size_t>(draft_rows.size()) * static_cast<size_t>(ctx_.k));
    ctx_.dev.download(ctx_.main, host_drafts_.data(),
                      drafter_->drafts().rows(0, static_cast<int64_t>(draft_rows.size())));
  }
  ctx_.dev.stream_sync(ctx_.main);
  ModelOutput out;
  out.step = so.step;
  out.draft_budget = budget;
  out.time = ctx_.rt.now();
  int32_t row = 0;
  size_t next_draft = 0;
  for (int64_t i = 0; i < n; ++i) {
    const ScheduledRequest& r = so.requests[static_cast<size_t>(i)];
    RowOutput o;
    o.idx = r.idx;
    o.id = r.id;
    o.num_sampled = host_counts_[static_cast<size_t>(i)];
    o.num_rejected = host_counts_[static_cast<size_t>(n + i)];
    for (int j = 0; j < o.num_sampled; ++j) o.tokens.push_back(host_sampled_[static_cast<size_t>(i * width + j)]);
    if (r.decode())
      for (int32_t t = row + 1; t < row + r.num_tokens; ++t)
        o.drafts_verified.push_back(host_inputs_[static_cast<size_t>(t)]);
    if (drafted && next_draft < draft_rows.size() && draft_rows[next_draft] == static_cast<int32_t>(i)) {
      for (int j = 0; j < budget; ++j)
        o.drafts_proposed.push_back(host_drafts_[next_draft * static_cast<size_t>(ctx_.k) + static_cast<size_t>(j)]);
      ++next_draft;
    }
    row += r.num_tokens;
    out.rows.push_back(std::move(o));
  }
  ctx_.rt.channel(ctx_.outputs).send(std::move(out));
}

}  // namespace ppspec::engine
