#include "verify/monitors/tap_placement.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/finding_kinds.h"
#include "core/probes.h"
#include "engine/checkpoint.h"

namespace ppspec::verify {

namespace {

struct Misplaced {
  int64_t tap = -1;      // the tapped layer whose tap is wrong
  int64_t layer = -1;    // the layer digested into it, -1: none
  bool not_own = false;  // a tap of a layer the stage does not hold
};

// The first tap of the stage's that its forward filled wrongly or not at all, and a tap the stage
// does not hold filled there; none: tap -1.
Misplaced first_misplaced(const std::vector<int64_t>& own, std::span<const int64_t> pairs) {
  for (size_t i = 0; i + 1 < pairs.size(); i += core::EagleTapsProbe::kTapFields)
    if (pairs[i] != pairs[i + 1] || std::find(own.begin(), own.end(), pairs[i]) == own.end())
      return {pairs[i], pairs[i + 1], std::find(own.begin(), own.end(), pairs[i]) == own.end()};
  for (const int64_t t : own) {
    int filled = 0;
    for (size_t i = 0; i + 1 < pairs.size(); i += core::EagleTapsProbe::kTapFields) filled += pairs[i] == t;
    if (filled != 1) return {t, filled == 0 ? -1 : t, false};
  }
  return {};
}

}  // namespace

void TapPlacement::on_event(const core::Event& e) {
  if (reported(core::FindingKind::tap_placement) || facts_.model == nullptr || facts_.eagle_taps.empty()) return;
  const int stage = facts_.stage_of(e.rank);
  const engine::LayerRange range = engine::stage_layers(*facts_.model, facts_.pp, stage);
  std::vector<int64_t> own;
  for (const int t : facts_.eagle_taps)
    if (t >= range.first && t < range.last) own.push_back(t);
  const Misplaced m = first_misplaced(own, core::EagleTapsProbe::decode(e).taps);
  if (m.tap < 0) return;
  std::string what;
  if (m.not_own)
    what =
        fmt::format("filled EAGLE's tap of layer {}, a layer it does not hold, from layer {}'s output", m.tap, m.layer);
  else if (m.layer < 0)
    what = fmt::format("digested no layer's output into EAGLE's tap of layer {}", m.tap);
  else if (m.layer == m.tap)
    what = fmt::format("digested layer {}'s output more than once into its tap", m.tap);
  else
    what = fmt::format("filled EAGLE's tap of layer {} from layer {}'s output", m.tap, m.layer);
  core::Finding f = finding_at(e, core::Verdict::output_divergence, core::FindingKind::tap_placement,
                               fmt::format("rank{} (stage {}, layers {}..{}) {} at engine step {}", e.rank, stage,
                                           range.first, range.last - 1, what, e.step));
  f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                               fmt::format("eagle_tap after layer {}", m.layer < 0 ? m.tap : m.layer), ""});
  f.details.push_back(fmt::format(
      "the drafter on the last stage reads tap {} as layer {}'s output: stage {} holds layer {} and must digest its "
      "output there, once per forward (taps {}; layers {}..{} on this stage)",
      m.tap, m.tap, stage, m.tap, fmt::join(facts_.eagle_taps, ", "), range.first, range.last - 1));
  // The local-index shape: the layer it used is the tap's number counted from the stage's first layer.
  const bool local_index = stage > 0 && m.layer >= 0 && m.layer != m.tap &&
                           std::find(facts_.eagle_taps.begin(), facts_.eagle_taps.end(),
                                     static_cast<int>(m.layer - range.first)) != facts_.eagle_taps.end();
  if (local_index || (m.layer < 0 && stage > 0))
    f.details.push_back(
        "a stage that finds its taps by the index of a layer within the stage, not its number in the model, digests "
        "the wrong layers or none on every stage but the first (vLLM #36151: enumerate(islice(layers, start, end)) "
        "without start=start_layer)");
  report(std::move(f));
}

}  // namespace ppspec::verify
