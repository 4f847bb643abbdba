// PyTorch's dtype names as Flight Recorder dumps write them ("Float", "Long", ...), and ppspec's.
#pragma once

#include <optional>
#include <string_view>

#include "core/dtype.h"

namespace ppspec::traces {

const char* torch_dtype(core::Dtype d);
// The ppspec dtype of a PyTorch dtype name; nullopt for one ppspec has none of (Bool, Short, ...).
std::optional<core::Dtype> parse_torch_dtype(std::string_view torch);

}  // namespace ppspec::traces
