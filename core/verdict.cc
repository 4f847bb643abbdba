#include "core/verdict.h"

#include <string>

#include <fmt/format.h>

#include "core/enum_names.h"

namespace ppspec::core {
namespace {
constexpr EnumNames<Verdict, 18> kNames{{{
    {"pass", Verdict::pass},
    {"fifo-misalignment", Verdict::fifo_misalignment},
    {"deadlock", Verdict::deadlock},
    {"hazard", Verdict::hazard},
    {"stale-draft", Verdict::stale_draft},
    {"padding-violation", Verdict::padding_violation},
    {"embedding-violation", Verdict::embedding_violation},
    {"output-divergence", Verdict::output_divergence},
    {"nondeterminism", Verdict::nondeterminism},
    {"step-limit", Verdict::step_limit},
    {"hang", Verdict::hang},
    {"invalid-usage", Verdict::invalid_usage},
    {"device-fault", Verdict::device_fault},
    {"race", Verdict::race},
    {"stage-divergence", Verdict::stage_divergence},
    {"kv-violation", Verdict::kv_violation},
    {"leak", Verdict::leak},
    {"pipeline-bubble", Verdict::pipeline_bubble},
}}};
const std::string kList = kNames.list();
}  // namespace

std::string_view to_string(Verdict v) { return kNames.name(v); }
std::optional<Verdict> parse_verdict(std::string_view s) { return kNames.parse(s); }
std::string_view verdict_names() { return kList; }

std::string site_words(const Site& site) {
  if (site.actor.empty()) return "";
  std::string s = site.actor;
  if (!site.comm.empty())
    s += site.cseq >= 0 ? fmt::format(" on {} #{}", site.comm, site.cseq) : fmt::format(" on {}", site.comm);
  if (site.comm.empty() && !site.what.empty()) s += fmt::format(" ({})", site.what);
  if (!site.origin.empty()) s += fmt::format(" [{}]", site.origin);
  return s;
}

Finding untimed_note(FindingKind kind, std::string summary) {
  Finding n;
  n.verdict = Verdict::pass;
  n.kind = kind;
  n.time = kNoTime;
  n.summary = std::move(summary);
  return n;
}

bool Finding::involves_rank(RankId r) const {
  for (const Site& s : sites)
    if (s.rank == r) return true;
  return false;
}

}  // namespace ppspec::core
