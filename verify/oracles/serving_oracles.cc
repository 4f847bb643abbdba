#include "verify/oracles/serving_oracles.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/finding_kinds.h"
#include "core/assert.h"
#include "verify/oracles/golden.h"
#include "verify/monitors/monitor.h"

namespace ppspec::verify {
namespace {

const engine::RequestRecord* find(const std::vector<engine::RequestRecord>& rs, int64_t id) {
  for (const auto& r : rs)
    if (r.spec.id == id) return &r;
  return nullptr;
}

// Where a request's output token #i came from: its engine step and time (the last token's when i
// is past the end).
void locate(core::Finding& f, const engine::RequestRecord& r, size_t i) {
  f.request = r.spec.id;
  if (r.output_step.empty()) return;
  const size_t at = std::min(i, r.output_step.size() - 1);
  f.engine_step = r.output_step[at];
  f.time = r.output_time[at];
}

// The drafts a request verified with its first draft at `position`; null when it verified none
// there. A record from before positions were kept (position -1) is matched by decode step `d`.
const std::vector<int64_t>* drafts_at(const engine::RequestRecord& r, size_t d, int64_t position) {
  if (position < 0) return d < r.verified_drafts.size() ? &r.verified_drafts[d] : nullptr;
  for (size_t i = 0; i < r.verified_position.size(); ++i)
    if (r.verified_position[i] == position) return &r.verified_drafts[i];
  return nullptr;
}

// The output index from which `a` draws tokens differently from `b`: its first verification block
// (first draft position, draft count) that `b` did not verify alike. Its tokens start at the
// block's first draft position.
size_t first_unshared_block(const engine::RequestRecord& a, const engine::RequestRecord& b) {
  const auto prompt = static_cast<int64_t>(a.spec.prompt.size());
  for (size_t i = 0; i < a.verified_position.size() && i < a.verified_drafts.size(); ++i) {
    const int64_t position = a.verified_position[i];
    const std::vector<int64_t>* other = drafts_at(b, i, position);
    if (other == nullptr || other->size() != a.verified_drafts[i].size())
      return static_cast<size_t>(std::max<int64_t>(position - prompt, 0));
  }
  return SIZE_MAX;
}

// The output tokens two runs of one request are expected to agree on: all of them, but for a
// request sampled with temperature only those before its first preemption in either run, and with
// an adaptive draft budget (whose picks depend on the batch) those before the first verification
// block the runs do not share: a token is drawn one way where a draft was verified, another where
// none was.
size_t comparable_tokens(const engine::EngineConfig& cfg, const engine::RequestRecord& a,
                         const engine::RequestRecord& b) {
  if (a.spec.spread == 0) return SIZE_MAX;
  size_t n = SIZE_MAX;
  for (const engine::RequestRecord* r : {&a, &b})
    if (r->first_preempted_at >= 0) n = std::min(n, static_cast<size_t>(r->first_preempted_at));
  if (cfg.spec.adaptive_budget) n = std::min({n, first_unshared_block(a, b), first_unshared_block(b, a)});
  return n;
}

// Whether a request ended at the max_model_len rule: its next verification block (1 + K tokens
// from its computed length, prompt + output - 1) no longer fits.
bool ended_at_model_len(const engine::EngineConfig& cfg, const engine::RequestRecord& r) {
  const auto computed = static_cast<int64_t>(r.spec.prompt.size() + r.output.size()) - 1;
  return computed + cfg.spec.k + 1 >= cfg.model.max_model_len;
}

// Several requests may diverge: report the one that diverged first.
void keep_earliest(std::optional<core::Finding>& earliest, core::Finding f) {
  PPSPEC_ASSERT(f.kind != core::FindingKind::none && !f.summary.empty() && !f.sites.empty(),
                "an oracle finding without its kind, summary or site");
  if (!earliest || f.engine_step < earliest->engine_step) earliest = std::move(f);
}

core::Site sampler_site(const engine::EngineConfig& cfg, const std::string& what) {
  const core::RankId last = cfg.topology.rank_of(cfg.topology.pp - 1, 0);
  PPSPEC_ASSERT(last >= 0 && last < cfg.topology.pp * cfg.topology.tp, "the sampler on rank{}", last);
  return core::Site{last, fmt::format("rank{}.host", last), "", -1, what, ""};
}

// Where request `r`'s token #i, the first that differs, came from, and what the online monitors
// rule out upstream of it: the rank and stage where the value first differed.
void name_first_difference(core::Finding& f, const engine::EngineConfig& cfg, const engine::RequestRecord& r, size_t i,
                           const OnlineCoverage& online) {
  const core::RankId last = cfg.topology.rank_of(cfg.topology.pp - 1, 0);
  const int64_t step = r.output_step.empty() ? -1 : r.output_step[std::min(i, r.output_step.size() - 1)];
  const std::string sampled = fmt::format("token #{} of request {} was sampled by rank{} (stage {}) at engine step {}",
                                          i, r.spec.id, last, cfg.topology.pp - 1, step);
  if (online.rows_checked == 0) {
    f.details.push_back(sampled + "; the model oracle did not run, so an activation upstream may have differed first");
    return;
  }
  const std::string checked = fmt::format(
      "the model oracle compared {} activation rows of every rank and {} greedy samples "
      "with the reference model over the tokens stage 0 embedded, and stage agreement "
      "every embedded token with what was sampled: none differed",
      online.rows_checked, online.samples_checked);
  if (r.spec.spread == 0)
    f.details.push_back(fmt::format(
        "{}; {}: the first differing value is no activation and no sample but the engine "
        "core's record of the request (its output list, its stop or its length rule){}",
        sampled, checked,
        cfg.workload.stop_strings.empty() ? "" : ", or what the front end returned of it (its stop strings)"));
  else
    f.details.push_back(
        fmt::format("{}; {}: the first value that differed is this sample itself, drawn with temperature "
                    "on rank{} (its seed, its output index, or the drafts it compared)",
                    sampled, checked, last));
}

}  // namespace

std::optional<core::Finding> golden_oracle(const engine::EngineConfig& cfg, const engine::Checkpoint& ckpt,
                                           const std::vector<engine::RequestRecord>& requests,
                                           const OnlineCoverage& online) {
  std::optional<core::Finding> earliest;
  for (const engine::RequestRecord& r : requests) {
    if (r.spec.spread != 0) continue;  // the golden continuation is greedy
    std::vector<int64_t> golden = golden_continuation(ckpt, cfg.model, r.spec.prompt, r.spec.max_tokens);
    StopCut cut;  // no stop strings: the whole continuation, whose text no report shows
    if (!cfg.workload.stop_strings.empty()) {
      cut = stop_cut(cfg.model, cfg.workload.stop_strings, cfg.workload.include_stop_str_in_output, golden);
      golden.resize(cut.tokens);
    }
    const std::span<const int64_t> out = r.returned();
    const size_t n = std::min(golden.size(), out.size());
    size_t i = 0;
    while (i < n && golden[i] == out[i]) ++i;
    PPSPEC_ASSERT(i <= n && n <= golden.size() && n <= out.size());
    // An aborted request stops anywhere (one its stop string ended does not); one that reached
    // max_model_len stops once its next verification block no longer fits.
    const bool capped = ended_at_model_len(cfg, r);
    const bool open_end = (r.aborted && r.stop_string < 0) || capped;
    const bool length_ok = open_end ? out.size() <= golden.size() : out.size() == golden.size();
    if (i == n && length_ok) continue;
    core::Finding f;
    f.verdict = core::Verdict::output_divergence;
    f.kind = core::FindingKind::golden;
    locate(f, r, i);
    const bool past_stop = i == n && out.size() > golden.size() && !golden.empty() &&
                           (cut.stop >= 0 || golden.back() == cfg.model.stop_token);
    if (i < n) {
      f.summary = fmt::format("request {} output token #{} is {}, the golden continuation has {}", r.spec.id, i, out[i],
                              golden[i]);
    } else if (past_stop) {
      // The tokens agree up to the stop: the engine core kept sampling, or kept tokens sampled
      // after the stop in the same accepted run.
      locate(f, r, golden.size());
      const size_t extra = out.size() - golden.size();
      const std::string what = cut.stop >= 0 ? fmt::format("stop string \"{}\" completed",
                                                           cfg.workload.stop_strings[static_cast<size_t>(cut.stop)])
                                             : fmt::format("stop token {}", cfg.model.stop_token);
      f.summary = fmt::format(
          "request {} returned {} token{} after its {} (output token #{}): the golden continuation ends there",
          r.spec.id, extra, extra == 1 ? "" : "s", what, golden.size() - 1);
      i = golden.size();
    } else {
      f.summary = fmt::format("request {} ended with {} tokens, the golden continuation has {}", r.spec.id, out.size(),
                              golden.size());
    }
    f.details.push_back(fmt::format("prompt {}", [&] {
      std::vector<int64_t> p(r.spec.prompt.begin(), r.spec.prompt.end());
      return token_list(p);
    }()));
    f.details.push_back(fmt::format("engine {}", token_list(out)));
    f.details.push_back(fmt::format("golden {}", token_list(golden)));
    if (!cfg.workload.stop_strings.empty())
      f.details.push_back(fmt::format("text returned \"{}\", golden \"{}\"", r.text, cut.text));
    f.sites.push_back(sampler_site(cfg, fmt::format("request {} token #{} sampled on the last stage", r.spec.id, i)));
    name_first_difference(f, cfg, r, i, online);
    keep_earliest(earliest, std::move(f));
  }
  return earliest;
}

namespace {

// What the front end did instead, read from what it returned: the step whose new tokens completed
// the stop string, and whether the front end cut the text but not the tokens, chose another stop
// string completed in the same step, or missed it.
std::string stop_string_cause(const engine::EngineConfig& cfg, const engine::RequestRecord& r, const StopCut& cut) {
  const std::vector<std::string>& stops = cfg.workload.stop_strings;
  const size_t done = cut.tokens - 1;  // the token that completes it
  PPSPEC_ASSERT(cut.stop >= 0 && done < r.output_step.size());
  const int64_t step = r.output_step[done];
  size_t first = done, last = done;  // the step's new tokens
  while (first > 0 && r.output_step[first - 1] == step) --first;
  while (last + 1 < r.output_step.size() && r.output_step[last + 1] == step) ++last;
  const std::string& want = stops[static_cast<size_t>(cut.stop)];
  const std::string where =
      fmt::format("engine step {} returned output tokens #{} to #{}, and token #{} completed \"{}\"", step, first, last,
                  done, want);
  if (r.stop_string == cut.stop && r.text == cut.text)
    return fmt::format(
        "{}; the front end ended the request on it and cut the text there, but returned the tokens "
        "sampled after it: text cut, token ids not (vLLM #47616)",
        where);
  const bool same_step = r.returned_tokens > 0 && r.output_step[static_cast<size_t>(r.returned_tokens) - 1] == step;
  if (r.stop_string >= 0 && r.stop_string != cut.stop && same_step)
    return fmt::format(
        "{}; the front end ended the request on \"{}\", completed later in the same step's text and "
        "listed {} it: of the stop strings one update completes, the earliest-completing must win, not "
        "the first listed (vLLM #49391)",
        where, stops[static_cast<size_t>(r.stop_string)], r.stop_string < cut.stop ? "before" : "after");
  size_t longest = 0;
  for (const std::string& x : stops) longest = std::max(longest, x.size());
  const size_t after = last - done;
  return fmt::format(
      "{}, {} token{} before the end of the step's new tokens; the front end did not end the request "
      "there{}",
      where, after, after == 1 ? "" : "s",
      after > longest ? fmt::format(": a search of the text of only the last longest stop string + 1 = {} tokens "
                                    "cannot see it (SGLang #23802); the whole new text must be searched, from the "
                                    "longest stop string - 1 characters before it",
                                    longest + 1)
                      : std::string());
}

// The stop strings over what the front end returned: its tokens' text, cut where appending them one
// at a time completes a stop string (stop_cut), must be the text it returned, and no token may
// follow the one that completed it. Needs no reference: sampled requests are judged too.
std::optional<core::Finding> stop_string_finding(const engine::EngineConfig& cfg, const engine::RequestRecord& r) {
  const std::vector<std::string>& stops = cfg.workload.stop_strings;
  const std::span<const int64_t> out = r.returned();
  const StopCut cut = stop_cut(cfg.model, stops, cfg.workload.include_stop_str_in_output, out);
  const bool past_stop = cut.stop >= 0 && out.size() > cut.tokens;
  if (!past_stop && r.text == cut.text) return std::nullopt;
  core::Finding f;
  f.verdict = core::Verdict::output_divergence;
  f.kind = core::FindingKind::finish_rule;
  const std::string named =
      cut.stop >= 0 ? fmt::format("\"{}\"", stops[static_cast<size_t>(cut.stop)]) : std::string("none");
  const std::string ended =
      r.stop_string >= 0 ? fmt::format("\"{}\"", stops[static_cast<size_t>(r.stop_string)]) : std::string("none");
  if (past_stop) {
    locate(f, r, cut.tokens);
    const size_t extra = out.size() - cut.tokens;
    f.summary = fmt::format(
        "request {} returned {} token{} after its stop string {} completed (output token #{}); the front end "
        "ended it on {}",
        r.spec.id, extra, extra == 1 ? "" : "s", named, cut.tokens - 1, ended);
    f.details.push_back(stop_string_cause(cfg, r, cut));
  } else {
    locate(f, r, out.empty() ? 0 : out.size() - 1);
    f.summary = fmt::format(
        "request {} returned the text \"{}\", and its tokens' text cut at the earliest stop string ({}) is \"{}\"",
        r.spec.id, r.text, named, cut.text);
  }
  f.details.push_back(fmt::format("returned {}, text \"{}\"", token_list(out), r.text));
  f.details.push_back(fmt::format("stop strings [\"{}\"], include_stop_str_in_output = {}", fmt::join(stops, "\", \""),
                                  cfg.workload.include_stop_str_in_output));
  f.details.push_back(
      "the front end ends a request at the stop string its text completes earliest, keeping the token that "
      "completes it and dropping those after, however many tokens one step accepted (vLLM check_stop_strings, "
      "#47616, #49391)");
  f.sites.push_back(sampler_site(cfg, fmt::format("request {} token #{} returned by the front end", r.spec.id,
                                                  past_stop ? cut.tokens : out.size())));
  return f;
}

}  // namespace

std::optional<core::Finding> stop_string_oracle(const engine::EngineConfig& cfg,
                                                const std::vector<engine::RequestRecord>& requests) {
  std::optional<core::Finding> earliest;
  if (cfg.workload.stop_strings.empty()) return earliest;
  for (const engine::RequestRecord& r : requests)
    if (!r.dummy)
      if (auto f = stop_string_finding(cfg, r)) keep_earliest(earliest, std::move(*f));
  return earliest;
}

std::optional<core::Finding> finish_rule_oracle(const engine::EngineConfig& cfg,
                                                const std::vector<engine::RequestRecord>& requests) {
  std::optional<core::Finding> earliest;
  const int64_t stop = cfg.model.stop_token;
  for (const engine::RequestRecord& r : requests) {
    if (r.dummy) continue;  // warmup's synthetic requests: their outputs are discarded
    const auto n = static_cast<int64_t>(r.output.size());
    const auto early = std::find(r.output.begin(), r.output.end() - std::min<int64_t>(n, 1), stop);
    const bool past_stop = stop >= 0 && early != r.output.end() - std::min<int64_t>(n, 1);
    if (!past_stop && n <= r.spec.max_tokens) continue;
    core::Finding f;
    f.verdict = core::Verdict::output_divergence;
    f.kind = core::FindingKind::finish_rule;
    const auto at = static_cast<size_t>(past_stop ? early - r.output.begin() + 1 : r.spec.max_tokens);
    locate(f, r, at);
    f.summary = past_stop ? fmt::format("request {} returned {} token(s) after its stop token {} (output token #{})",
                                        r.spec.id, n - static_cast<int64_t>(at), stop, at - 1)
                          : fmt::format("request {} returned {} tokens, more than its max_tokens {}", r.spec.id, n,
                                        r.spec.max_tokens);
    f.details.push_back(fmt::format("engine {}", token_list(r.output)));
    f.details.push_back(past_stop ? "a request ends as soon as it samples the stop token, also inside an accepted run "
                                    "of drafts that reaches max_tokens (vLLM check_stop runs after each token)"
                                  : "a request returns at most max_tokens tokens, however many a step accepted");
    f.sites.push_back(sampler_site(cfg, fmt::format("request {} token #{} kept by the engine core", r.spec.id, at)));
    keep_earliest(earliest, std::move(f));
  }
  return earliest;
}

std::optional<core::Finding> invariance_oracle(const engine::EngineConfig& cfg, const Invariance& what,
                                               const std::vector<engine::RequestRecord>& run,
                                               const std::vector<engine::RequestRecord>& reference,
                                               const OnlineCoverage& online) {
  PPSPEC_ASSERT(what.kind != core::FindingKind::none && !what.run.empty() && !what.reference.empty());
  std::optional<core::Finding> earliest;
  for (const engine::RequestRecord& r : run) {
    const engine::RequestRecord* ref = find(reference, r.spec.id);
    if (ref == nullptr) continue;
    PPSPEC_ASSERT(ref->spec.id == r.spec.id);
    core::Finding f;
    f.verdict = core::Verdict::output_divergence;
    f.kind = what.kind;
    // A request sampled with temperature draws its tokens by rejection sampling where a draft was
    // verified and plainly where a prefill ended: once it was preempted in either run (where is
    // the schedule's to decide), the rest of its tokens are other draws of the same distribution.
    const size_t drawn = comparable_tokens(cfg, r, *ref);
    const size_t n = std::min({r.output.size(), ref->output.size(), drawn});
    size_t i = 0;
    while (i < n && r.output[i] == ref->output[i]) ++i;
    // Where an abort reaches the engine core depends on the schedule (in flight or not, which a
    // topology decides): an aborted request is compared over the tokens both runs have.
    // Where the max_model_len rule ends a request depends on where its verification blocks fall,
    // which a preemption in either run moves (its resumption is one prefill), and so does an
    // adaptive draft budget (its picks depend on the batch).
    const bool moved_blocks = r.preemptions > 0 || ref->preemptions > 0 || cfg.spec.adaptive_budget;
    const bool at_cap = moved_blocks && (ended_at_model_len(cfg, r) || ended_at_model_len(cfg, *ref));
    const bool cut = r.aborted || ref->aborted || n == drawn || at_cap;
    if (i < n || (r.output.size() != ref->output.size() && !cut)) {
      locate(f, r, i);
      f.summary = fmt::format("request {} differs from the same scenario with {} at output token #{}", r.spec.id,
                              what.reference, i);
      f.details.push_back(fmt::format("{}: {}", what.run, token_list(r.output)));
      f.details.push_back(fmt::format("{}: {}", what.reference, token_list(ref->output)));
      f.sites.push_back(sampler_site(cfg, fmt::format("request {} token #{}", r.spec.id, i)));
      name_first_difference(f, cfg, r, i, online);
      keep_earliest(earliest, std::move(f));
      continue;
    }
    // Drafts are compared where both runs verified them from the same position: a preemption
    // puts a prefill between two decode steps in one run only.
    for (size_t d = 0; d < r.verified_drafts.size(); ++d) {
      const auto& a = r.verified_drafts[d];
      const int64_t position = d < r.verified_position.size() ? r.verified_position[d] : -1;
      // Drafts follow from the context before them: past the tokens both runs drew alike, none to compare.
      if (drawn != SIZE_MAX && position > static_cast<int64_t>(r.spec.prompt.size() + drawn)) continue;
      const std::vector<int64_t>* match = drafts_at(*ref, d, position);
      if (match == nullptr || a.size() != match->size() || a == *match) continue;
      const auto& b = *match;
      f.request = r.spec.id;
      if (d < r.verified_step.size()) {
        f.engine_step = r.verified_step[d];
        for (size_t t = 0; t < r.output_step.size(); ++t)
          if (r.output_step[t] == f.engine_step) {
            f.time = r.output_time[t];
            break;
          }
      }
      f.summary = fmt::format("request {} verified different drafts at its decode step {} than with {}", r.spec.id, d,
                              what.reference);
      f.details.push_back(fmt::format("{}: {}", what.run, token_list(a)));
      f.details.push_back(fmt::format("{}: {}", what.reference, token_list(b)));
      f.sites.push_back(sampler_site(cfg, fmt::format("request {} decode step {}", r.spec.id, d)));
      keep_earliest(earliest, std::move(f));
      break;
    }
  }
  return earliest;
}

std::optional<core::Finding> pp_invariance_oracle(const engine::EngineConfig& cfg,
                                                  const std::vector<engine::RequestRecord>& run,
                                                  const std::vector<engine::RequestRecord>& reference,
                                                  const OnlineCoverage& online) {
  const std::string here = fmt::format("pp = {}", cfg.topology.pp);
  return invariance_oracle(cfg, Invariance{core::FindingKind::pp_invariance, here, "pp = 1"}, run, reference, online);
}

std::optional<core::Finding> padding_invariance_oracle(const engine::EngineConfig& cfg,
                                                       const std::vector<engine::RequestRecord>& graphs,
                                                       const std::vector<engine::RequestRecord>& eager,
                                                       const OnlineCoverage& online) {
  return invariance_oracle(cfg, Invariance{core::FindingKind::padding_invariance, "graphs", "eager (no graph padding)"},
                           graphs, eager, online);
}

}  // namespace ppspec::verify
