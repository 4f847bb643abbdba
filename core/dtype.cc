#include "core/dtype.h"

#include <string>

#include "core/enum_names.h"

namespace ppspec::core {
namespace {
constexpr EnumNames<Dtype, 10> kDtypeNames{{{
    {"i8", Dtype::i8}, {"u8", Dtype::u8}, {"i32", Dtype::i32}, {"u32", Dtype::u32},
    {"i64", Dtype::i64}, {"u64", Dtype::u64}, {"f16", Dtype::f16}, {"bf16", Dtype::bf16},
    {"f32", Dtype::f32}, {"f64", Dtype::f64},
}}};
const std::string kList = kDtypeNames.list();
}  // namespace

std::string_view to_string(Dtype d) { return kDtypeNames.name(d); }
std::optional<Dtype> parse_dtype(std::string_view s) { return kDtypeNames.parse(s); }
std::string_view dtype_names() { return kList; }

}  // namespace ppspec::core
