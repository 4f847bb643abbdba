#include "core/dtype.h"

#include <string>

#include "core/enum_names.h"

namespace ppspec::core {
namespace {
constexpr EnumNames<Dtype, 10> kDtypeNames{{{
    {"i8", Dtype::i8},
    {"u8", Dtype::u8},
    {"i32", Dtype::i32},
    {"u32", Dtype::u32},
    {"i64", Dtype::i64},
    {"u64", Dtype::u64},
    {"f16", Dtype::f16},
    {"bf16", Dtype::bf16},
    {"f32", Dtype::f32},
    {"f64", Dtype::f64},
}}};
const std::string kList = kDtypeNames.list();
// torch's spellings of the same types (torch.float32, "int64", ...), accepted where a user writes one.
constexpr EnumNames<Dtype, 15> kTorchNames{{{
    {"int8", Dtype::i8},
    {"uint8", Dtype::u8},
    {"int32", Dtype::i32},
    {"int", Dtype::i32},
    {"uint32", Dtype::u32},
    {"int64", Dtype::i64},
    {"long", Dtype::i64},
    {"uint64", Dtype::u64},
    {"float16", Dtype::f16},
    {"half", Dtype::f16},
    {"bfloat16", Dtype::bf16},
    {"float32", Dtype::f32},
    {"float", Dtype::f32},
    {"float64", Dtype::f64},
    {"double", Dtype::f64},
}}};
const std::string kListWithTorch = kList + " (or torch's: float32, bfloat16, int64, ...)";
}  // namespace

std::string_view to_string(Dtype d) { return kDtypeNames.name(d); }
std::optional<Dtype> parse_dtype(std::string_view s) { return kDtypeNames.parse(s); }
std::string_view dtype_names() { return kList; }

std::optional<Dtype> parse_dtype_or_torch(std::string_view s) {
  if (const std::optional<Dtype> d = kDtypeNames.parse(s)) return d;
  if (s.starts_with("torch.")) s.remove_prefix(6);
  return kTorchNames.parse(s);
}
std::string_view dtype_names_with_torch() { return kListWithTorch; }

}  // namespace ppspec::core
