// The CUDA graph sizes vLLM captures, as its CompilationConfig settles them: the user's list
// (compilation_config.cudagraph_capture_sizes, or the older --cuda-graph-sizes), else its default —
// 1, 2, 4, then multiples of 8 below 256 and of 16 from 256, up to the largest capture size
// (min(max_num_seqs x (1 + K) x 2, 512) unless max_cudagraph_capture_size says) — capped at
// max_num_batched_tokens; with speculative decoding each size rounded up to a multiple of 1 + K
// (adjust_cudagraph_sizes_for_spec_decode), so that a uniform decode batch fills a graph.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ppspec::vllm_config {

struct CaptureSizeInputs {
  std::optional<std::vector<int>> given;  // the user's list
  std::optional<int> max_size;            // max_cudagraph_capture_size
  int max_num_seqs = 256;                 // per engine (vLLM's)
  int max_num_batched_tokens = 8192;
  int k = 0;
};

struct CaptureSizes {
  std::vector<int> sizes;          // sorted, unique
  std::vector<std::string> notes;  // what was derived or changed, in words
};

CaptureSizes capture_sizes(const CaptureSizeInputs& in);

}  // namespace ppspec::vllm_config
