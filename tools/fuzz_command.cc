#include "tools/fuzz_command.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ostream>
#include <unistd.h>

#include "core/error.h"
#include "core/printable.h"
#include "fuzzer/campaign.h"

namespace ppspec::tools {
namespace {

// The faults a campaign may switch on (engine::Faults).
constexpr const char* kFaults[] = {"stale_drafts",         "double_post_drafts",     "lazy_post_update",
                                   "warmup_feedback",      "narrow_sampled_width",   "uncleared_padding",
                                   "router_ignores_padding", "alias_target_embed", "unordered_draft_gather"};

std::optional<uint64_t> number(std::string_view s, uint64_t min, uint64_t max) {
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < min || v > max) return std::nullopt;
  return v;
}

// "90", "90s", "5m", "2h" -> seconds.
std::optional<double> duration(std::string_view s) {
  uint64_t scale = 1;
  if (!s.empty() && (s.back() == 's' || s.back() == 'm' || s.back() == 'h')) {
    scale = s.back() == 'h' ? 3600 : s.back() == 'm' ? 60 : 1;
    s.remove_suffix(1);
  }
  const auto v = number(s, 1, 30 * 24 * 3600);
  if (!v) return std::nullopt;
  return static_cast<double>(*v * scale);
}

struct BadFlag {
  std::string message;
};

void parse_shard(const std::string& text, fuzzer::FuzzOptions& o) {
  const auto slash = text.find('/');
  const auto i = slash == std::string::npos ? std::nullopt : number(std::string_view(text).substr(0, slash), 0, 1u << 20);
  const auto n = slash == std::string::npos ? std::nullopt : number(std::string_view(text).substr(slash + 1), 1, 1u << 20);
  if (!i || !n) throw BadFlag{fmt::format("--shard '{}': expected I/N, two integers with 0 <= I < N", core::printable(text, 40))};
  if (*i >= *n) throw BadFlag{fmt::format("--shard '{}': shard {} of {} does not exist (0 <= I < N)", text, *i, *n)};
  o.shard = *i;
  o.shards = *n;
}

std::vector<std::string> parse_faults(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string name = text.substr(start, comma - start);
    if (std::find(std::begin(kFaults), std::end(kFaults), name) == std::end(kFaults))
      throw BadFlag{fmt::format("--faults: '{}' is not a fault; the faults are: {}", core::printable(name, 40),
                                fmt::join(kFaults, ", "))};
    out.push_back(name);
    start = comma + 1;
  }
  return out;
}

fuzzer::FuzzOptions options(const FuzzArgs& a) {
  fuzzer::FuzzOptions o;
  if (!a.space.empty()) o.space = fuzzer::read_space(a.space);
  const auto seed = number(a.seed, 0, INT64_MAX);
  if (!seed) throw BadFlag{fmt::format("--seed '{}': expected a seed in [0, 9223372036854775807]", core::printable(a.seed, 40))};
  o.seed = *seed;
  if (!a.cases.empty()) {
    o.cases = number(a.cases, 1, uint64_t{1} << 40);
    if (!o.cases) throw BadFlag{fmt::format("--cases '{}': expected a count in [1, 2^40]", core::printable(a.cases, 40))};
  }
  if (!a.time.empty()) {
    const auto t = duration(a.time);
    if (!t) throw BadFlag{fmt::format("--time '{}': expected seconds, or a number with s, m or h (at most 30 days)", core::printable(a.time, 40))};
    o.time_s = *t;
  }
  if (!o.cases && o.time_s == 0) o.time_s = 60;  // the default campaign: one minute
  if (!a.shard.empty()) parse_shard(a.shard, o);
  const auto jobs = number(a.jobs, 1, 256);
  if (!jobs) throw BadFlag{fmt::format("--jobs '{}': expected a number of worker processes in [1, 256]", core::printable(a.jobs, 40))};
  if (*jobs != 1) throw BadFlag{"--jobs: only 1 is supported yet; run --shard I/N in N processes instead"};
  if (!a.faults.empty()) o.faults = parse_faults(a.faults);
  o.out_dir = a.out;
  o.keep_going = a.keep_going;
  o.live_progress = isatty(fileno(stderr)) != 0;
  return o;
}

}  // namespace

int fuzz_command(const FuzzArgs& args, std::ostream& out, std::ostream& err) {
  fuzzer::FuzzOptions o;
  try {
    o = options(args);
  } catch (const BadFlag& b) {
    err << "ppspec fuzz: " << b.message << '\n';
    return 2;
  } catch (const core::InputError& e) {
    err << "ppspec fuzz: " << e.what() << '\n';
    return 2;
  }
  const fuzzer::FuzzReport r = fuzzer::run_campaign(o, out, err);
  return r.failures > 0 ? 1 : 0;
}

}  // namespace ppspec::tools
