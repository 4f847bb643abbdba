#include "traces/torch_dtype.h"

#include <array>
#include <utility>

namespace ppspec::traces {
namespace {

constexpr std::array<std::pair<core::Dtype, const char*>, 10> kNames{{{core::Dtype::i8, "Char"},
                                                                      {core::Dtype::u8, "Byte"},
                                                                      {core::Dtype::i32, "Int"},
                                                                      {core::Dtype::u32, "UInt32"},
                                                                      {core::Dtype::i64, "Long"},
                                                                      {core::Dtype::u64, "UInt64"},
                                                                      {core::Dtype::f16, "Half"},
                                                                      {core::Dtype::bf16, "BFloat16"},
                                                                      {core::Dtype::f32, "Float"},
                                                                      {core::Dtype::f64, "Double"}}};

}  // namespace

const char* torch_dtype(core::Dtype d) {
  for (const auto& [dtype, name] : kNames)
    if (dtype == d) return name;
  return "?";
}

std::optional<core::Dtype> parse_torch_dtype(std::string_view torch) {
  for (const auto& [dtype, name] : kNames)
    if (torch == name) return dtype;
  return std::nullopt;
}

}  // namespace ppspec::traces
