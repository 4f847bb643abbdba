#include "core/did_you_mean.h"

#include <algorithm>
#include <cctype>

#include "core/assert.h"

namespace ppspec::core {

size_t edit_distance(std::string_view a, std::string_view b) {
  // Names are short (options, keys): three rows of the table are enough.
  constexpr size_t kMax = 256;
  if (a.size() > kMax || b.size() > kMax) return std::max(a.size(), b.size());
  auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  };
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]))
        cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    before.swap(prev);
    prev.swap(cur);
  }
  PPSPEC_ASSERT(prev[b.size()] <= std::max(a.size(), b.size()));
  return prev[b.size()];
}

std::optional<std::string> closest_name(std::string_view name, const std::vector<std::string>& valid) {
  const size_t limit = std::max<size_t>(1, name.size() / 4);
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (const std::string& v : valid) {
    const size_t d = edit_distance(name, v);
    if (d < best_distance) {
      best_distance = d;
      best = v;
    }
  }
  return best;
}

}  // namespace ppspec::core
