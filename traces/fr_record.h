// The content of one Flight Recorder dump from the JSON value its file holds (traces/fr_record.cc).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "traces/flight_recorder.h"

namespace ppspec::traces {

FrDump fr_dump_from_json(const nlohmann::json& j, const std::string& file, int rank);

}  // namespace ppspec::traces
