#include "tools/cli_names.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fmt/format.h>
#include <optional>

#include "core/did_you_mean.h"
#include "core/printable.h"

namespace ppspec::tools {
namespace {

std::string suggestion(const std::string& name, const std::vector<std::string>& valid, const std::string& prefix) {
  const std::optional<std::string> near = core::closest_name(name, valid);
  return near ? fmt::format(": did you mean '{}{}'?", prefix, *near) : "";
}

// The long names of an app's options (without their dashes), "help" and "version" included.
std::vector<std::string> long_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& n : o->get_lnames()) names.push_back(n);
  return names;
}

}  // namespace

std::string unknown_name(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.empty() || args[0].starts_with("-")) return "";  // --help, --version: CLI11's
  std::vector<std::string> commands;
  const CLI::App* command = nullptr;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    commands.push_back(sub->get_name());
    if (sub->get_name() == args[0]) command = sub;
  }
  if (command == nullptr)
    return fmt::format("unknown command '{}'{} (ppspec --help lists them)", core::printable(args[0], 40),
                       suggestion(args[0], commands, ""));
  const std::vector<std::string> valid = long_names(*command);
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (!a.starts_with("--") || a.size() == 2) continue;
    const std::string name = a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2);
    if (std::find(valid.begin(), valid.end(), name) != valid.end()) continue;
    return fmt::format("{}: unknown option --{}{} (ppspec {} --help lists them)", args[0], core::printable(name, 40),
                       suggestion(name, valid, "--"), args[0]);
  }
  return "";
}

}  // namespace ppspec::tools
