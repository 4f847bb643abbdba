#include "program/program.h"

#include <string>

#include "core/enum_names.h"

namespace ppspec::program {
namespace {
constexpr core::EnumNames<OpType, 22> kNames{{{
    {"send", OpType::send},
    {"recv", OpType::recv},
    {"broadcast", OpType::broadcast},
    {"all_reduce", OpType::all_reduce},
    {"all_gather", OpType::all_gather},
    {"all_to_all", OpType::all_to_all},
    {"group_start", OpType::group_start},
    {"group_end", OpType::group_end},
    {"launch", OpType::launch},
    {"preload", OpType::preload},
    {"record", OpType::record},
    {"wait_event", OpType::wait_event},
    {"event_sync", OpType::event_sync},
    {"stream_sync", OpType::stream_sync},
    {"device_sync", OpType::device_sync},
    {"malloc", OpType::malloc},
    {"sleep", OpType::sleep},
    {"capture_begin", OpType::capture_begin},
    {"capture_end", OpType::capture_end},
    {"graph_launch", OpType::graph_launch},
    {"wait_flag", OpType::wait_flag},
    {"set_flag", OpType::set_flag},
}}};
const std::string kList = kNames.list();
}  // namespace

std::string_view to_string(OpType t) { return kNames.name(t); }
std::optional<OpType> parse_op_type(std::string_view s) { return kNames.parse(s); }
std::string_view op_type_names() { return kList; }

bool is_comm_op(OpType t) {
  return t == OpType::send || t == OpType::recv || t == OpType::broadcast || t == OpType::all_reduce ||
         t == OpType::all_gather || t == OpType::all_to_all;
}

bool is_p2p_op(OpType t) { return t == OpType::send || t == OpType::recv; }

}  // namespace ppspec::program
