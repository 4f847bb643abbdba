// What a worker tells the runtime it is doing while it runs a step ("execute_model step N"), so that
// reports of what its host thread did there (a module load, a blocking call) name the step; and back.
// Events carry the step as a number; reading it back from the text serves reports built from sites
// and traces written before module loads carried their step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ppspec::core {

std::string step_call_site(int64_t step);
std::optional<int64_t> step_of_call_site(std::string_view call_site);

}  // namespace ppspec::core
