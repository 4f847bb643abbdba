// Names on the command line checked before CLI11 reads it: an unknown command or option is said
// first, with the closest valid one ("did you mean --seeds?"), rather than the error of whatever
// CLI11 met next (`run x.toml --sedes 4` would otherwise say "File does not exist: 4").
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ppspec::tools {

// "" when every command and option is known; else the message to print (then exit 2). Tokens after
// a lone `--` are another program's (`from-vllm`'s vLLM flags) and are not checked.
std::string unknown_name(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace ppspec::tools
