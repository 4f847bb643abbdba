#include "core/types.h"

namespace ppspec::core {

std::string_view to_string(ModuleLoading m) {
  switch (m) {
    case ModuleLoading::eager: return "eager";
    case ModuleLoading::lazy: return "lazy";
    case ModuleLoading::jit: return "jit";
  }
  return "?";
}

std::optional<ModuleLoading> parse_module_loading(std::string_view s) {
  if (s == "eager") return ModuleLoading::eager;
  if (s == "lazy") return ModuleLoading::lazy;
  if (s == "jit") return ModuleLoading::jit;
  return std::nullopt;
}

std::string_view to_string(Concurrency c) { return c == Concurrency::ok ? "ok" : "serial"; }

std::optional<Concurrency> parse_concurrency(std::string_view s) {
  if (s == "ok") return Concurrency::ok;
  if (s == "serial") return Concurrency::serial;
  return std::nullopt;
}

std::string_view to_string(OnMismatch m) { return m == OnMismatch::report ? "report" : "emulate"; }

std::optional<OnMismatch> parse_on_mismatch(std::string_view s) {
  if (s == "report") return OnMismatch::report;
  if (s == "emulate") return OnMismatch::emulate;
  return std::nullopt;
}

}  // namespace ppspec::core
