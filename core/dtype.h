// Element types of buffers and communication operations (the NCCL datatypes ppspec needs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ppspec::core {

enum class Dtype : uint8_t { i8, u8, i32, u32, i64, u64, f16, bf16, f32, f64 };

constexpr size_t dtype_size(Dtype d) {
  switch (d) {
    case Dtype::i8:
    case Dtype::u8: return 1;
    case Dtype::f16:
    case Dtype::bf16: return 2;
    case Dtype::i32:
    case Dtype::u32:
    case Dtype::f32: return 4;
    case Dtype::i64:
    case Dtype::u64:
    case Dtype::f64: return 8;
  }
  return 0;
}

std::string_view to_string(Dtype d);
std::optional<Dtype> parse_dtype(std::string_view s);
// The same, or torch's spelling of it ("float32", "torch.int64", "half"): what a scenario accepts.
std::optional<Dtype> parse_dtype_or_torch(std::string_view s);
std::string_view dtype_names_with_torch();
// The accepted spellings, for error messages.
std::string_view dtype_names();

}  // namespace ppspec::core
