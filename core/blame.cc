#include "core/blame.h"

#include "core/enum_names.h"

namespace ppspec::core {
namespace {

constexpr EnumNames<Blame, 15> kBlameNames{{{{"", Blame::none},
                                             {"extra", Blame::extra},
                                             {"missing", Blame::missing},
                                             {"differs", Blame::differs},
                                             {"surplus", Blame::surplus},
                                             {"shifted", Blame::shifted},
                                             {"unresolved", Blame::unresolved},
                                             {"never-posted", Blame::never_posted},
                                             {"cycle", Blame::cycle},
                                             {"undated", Blame::undated},
                                             {"dropped", Blame::dropped},
                                             {"no-dump", Blame::no_dump},
                                             {"stalled", Blame::stalled},
                                             {"unbalanced", Blame::unbalanced},
                                             {"count", Blame::count}}}};

}  // namespace

std::string_view to_string(Blame b) { return kBlameNames.name(b); }
std::optional<Blame> parse_blame(std::string_view s) { return kBlameNames.parse(s); }

}  // namespace ppspec::core
