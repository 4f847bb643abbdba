#include "core/dtype.h"

#include <array>
#include <utility>

namespace ppspec::core {
namespace {
constexpr std::array<std::pair<std::string_view, Dtype>, 10> kNames{{
    {"i8", Dtype::i8}, {"u8", Dtype::u8}, {"i32", Dtype::i32}, {"u32", Dtype::u32},
    {"i64", Dtype::i64}, {"u64", Dtype::u64}, {"f16", Dtype::f16}, {"bf16", Dtype::bf16},
    {"f32", Dtype::f32}, {"f64", Dtype::f64},
}};
}  // namespace

std::string_view to_string(Dtype d) {
  for (const auto& [name, value] : kNames)
    if (value == d) return name;
  return "?";
}

std::optional<Dtype> parse_dtype(std::string_view s) {
  for (const auto& [name, value] : kNames)
    if (name == s) return value;
  return std::nullopt;
}

std::string_view dtype_names() { return "i8, u8, i32, u32, i64, u64, f16, bf16, f32, f64"; }

}  // namespace ppspec::core
