#include "core/types.h"

#include "core/enum_names.h"

namespace ppspec::core {
namespace {
constexpr EnumNames<ModuleLoading, 3> kLoading{
    {{{"eager", ModuleLoading::eager}, {"lazy", ModuleLoading::lazy}, {"jit", ModuleLoading::jit}}}};
constexpr EnumNames<Concurrency, 2> kConcurrency{{{{"ok", Concurrency::ok}, {"serial", Concurrency::serial}}}};
constexpr EnumNames<OnMismatch, 2> kMismatch{{{{"report", OnMismatch::report}, {"emulate", OnMismatch::emulate}}}};
}  // namespace

std::string_view to_string(ModuleLoading m) { return kLoading.name(m); }
std::optional<ModuleLoading> parse_module_loading(std::string_view s) { return kLoading.parse(s); }
std::string_view to_string(Concurrency c) { return kConcurrency.name(c); }
std::optional<Concurrency> parse_concurrency(std::string_view s) { return kConcurrency.parse(s); }
std::string_view to_string(OnMismatch m) { return kMismatch.name(m); }
std::optional<OnMismatch> parse_on_mismatch(std::string_view s) { return kMismatch.parse(s); }

}  // namespace ppspec::core
