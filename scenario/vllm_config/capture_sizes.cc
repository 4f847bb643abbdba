#include "scenario/vllm_config/capture_sizes.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/assert.h"

namespace ppspec::vllm_config {
namespace {

std::vector<int> default_sizes(int largest) {
  std::vector<int> sizes;
  for (int s : {1, 2, 4}) sizes.push_back(s);
  for (int s = 8; s < 256; s += 8) sizes.push_back(s);
  for (int s = 256; s <= largest; s += 16) sizes.push_back(s);
  sizes.erase(std::remove_if(sizes.begin(), sizes.end(), [largest](int s) { return s > largest; }), sizes.end());
  return sizes;
}

}  // namespace

CaptureSizes capture_sizes(const CaptureSizeInputs& in) {
  PPSPEC_ASSERT(in.k >= 0 && in.max_num_seqs > 0 && in.max_num_batched_tokens > 0);
  CaptureSizes out;
  const int per_step = 1 + in.k;
  std::vector<int> sizes;
  int largest = 0;
  if (in.given) {
    sizes = *in.given;
    largest = in.max_size.value_or(sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end()));
  } else {
    largest = in.max_size.value_or(std::min(in.max_num_seqs * per_step * 2, 512));
    sizes = default_sizes(largest);
    out.notes.push_back(fmt::format("cudagraph_capture_sizes: vLLM's default list up to {}", largest));
  }
  if (per_step > 1) {
    const std::vector<int> asked = sizes;
    for (int& s : sizes) s = (s + per_step - 1) / per_step * per_step;
    // No size past the largest, rounded down to a multiple.
    const int top = largest / per_step * per_step;
    sizes.erase(std::remove_if(sizes.begin(), sizes.end(), [top](int s) { return s > top; }), sizes.end());
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    if (sizes != asked)
      out.notes.push_back(fmt::format(
          "capture sizes rounded up to multiples of 1 + K = {} (vLLM's adjust_cudagraph_sizes_for_spec_decode)",
          per_step));
  }
  const size_t before_cap = sizes.size();
  sizes.erase(std::remove_if(sizes.begin(), sizes.end(), [&](int s) { return s > in.max_num_batched_tokens; }),
              sizes.end());
  if (sizes.size() != before_cap)
    out.notes.push_back(fmt::format("capture sizes above max_num_batched_tokens ({}) dropped, as vLLM caps them",
                                    in.max_num_batched_tokens));
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  out.sizes = sizes;
  return out;
}

}  // namespace ppspec::vllm_config
