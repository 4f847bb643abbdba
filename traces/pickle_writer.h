// Python pickles (protocol 2) of plain JSON values — dict, list, str, int, float, bool, None — as
// PyTorch's Flight Recorder writes its dumps, so that an exported dump is read by PyTorch's
// fr_trace and by traces/pickle.h alike. Deterministic: a dict's keys in the order the value holds.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ppspec::traces {

std::string pickle(const nlohmann::json& value);

}  // namespace ppspec::traces
