#include "core/op.h"

#include <fmt/format.h>

#include "core/enum_names.h"

namespace ppspec::core {

namespace {
constexpr EnumNames<OpKind, 8> kOpKindNames{{{{"send", OpKind::send},
                                              {"recv", OpKind::recv},
                                              {"broadcast", OpKind::broadcast},
                                              {"all_reduce", OpKind::all_reduce},
                                              {"all_gather", OpKind::all_gather},
                                              {"all_to_all", OpKind::all_to_all},
                                              {"reduce", OpKind::reduce},
                                              {"reduce_scatter", OpKind::reduce_scatter}}}};
}  // namespace

std::string_view to_string(OpKind k) { return kOpKindNames.name(k); }
std::optional<OpKind> parse_op_kind(std::string_view s) { return kOpKindNames.parse(s); }

std::string shape_of(const OpDesc& d) {
  return d.cols > 1 && d.count % d.cols == 0 ? fmt::format("{}[{}, {}]", to_string(d.dtype), d.count / d.cols, d.cols)
                                             : fmt::format("{}[{}]", to_string(d.dtype), d.count);
}

std::string describe(const OpDesc& d) {
  std::string s = fmt::format("{} {}", to_string(d.kind), shape_of(d));
  switch (d.kind) {
    case OpKind::send: s += fmt::format(" to rank{}", d.peer); break;
    case OpKind::recv: s += fmt::format(" from rank{}", d.peer); break;
    case OpKind::broadcast:
    case OpKind::reduce: s += fmt::format(" root rank{}", d.peer); break;
    default: break;
  }
  if (!d.label.empty()) s += fmt::format(" '{}'", d.label.str());
  if (d.captured) s += " (graph)";
  return s;
}

std::string mismatch_reason(const OpDesc& a, const OpDesc& b) {
  const OpFields f = mismatch_fields(a, b);
  std::string why;
  auto add = [&why](std::string part) {
    if (!why.empty()) why += "; ";
    why += part;
  };
  if (f.kind) add(fmt::format("kind {} vs {}", to_string(a.kind), to_string(b.kind)));
  if (f.dtype) add(fmt::format("dtype {} vs {}", to_string(a.dtype), to_string(b.dtype)));
  if (f.count) add(fmt::format("count {} vs {}", a.count, b.count));
  if (f.root) add(fmt::format("root rank{} vs rank{}", a.peer, b.peer));
  if (f.label) add(fmt::format("label '{}' vs '{}'", a.label.str(), b.label.str()));
  if (f.capture) add(fmt::format("graph capture {} vs {}", a.captured ? "yes" : "no", b.captured ? "yes" : "no"));
  return why;
}

}  // namespace ppspec::core
