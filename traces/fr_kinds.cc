// The kinds of Flight Recorder records, by the names PyTorch gives its calls: ProcessGroupNCCL's
// profiling titles ("nccl:" + the name) and ProcessGroupGloo's ("gloo:" + the name).
#include <array>
#include <utility>

#include "traces/flight_recorder.h"

namespace ppspec::traces {
namespace {

constexpr std::array<std::pair<std::string_view, FrKind>, 24> kKindNames = {{
    {"send", FrKind::send},
    {"recv", FrKind::recv},
    {"broadcast", FrKind::broadcast},
    {"_broadcast_oop", FrKind::broadcast_oop},
    {"reduce", FrKind::reduce},
    {"_reduce_oop", FrKind::reduce_oop},
    {"all_reduce", FrKind::all_reduce},
    {"all_reduce_barrier", FrKind::all_reduce_barrier},
    {"allreduce_coalesced", FrKind::allreduce_coalesced},
    {"all_gather", FrKind::all_gather},
    {"_all_gather_base", FrKind::all_gather_base},
    {"all_gather_into_tensor_coalesced", FrKind::all_gather_into_tensor_coalesced},
    {"allgather_into_tensor_coalesced", FrKind::all_gather_into_tensor_coalesced},  // older releases' spelling
    {"reduce_scatter", FrKind::reduce_scatter},
    {"_reduce_scatter_base", FrKind::reduce_scatter_base},
    {"reduce_scatter_tensor_coalesced", FrKind::reduce_scatter_tensor_coalesced},
    {"all_to_all", FrKind::all_to_all},
    {"gather", FrKind::gather},
    {"scatter", FrKind::scatter},
    {"barrier", FrKind::barrier},
    {"coalesced", FrKind::coalesced},
    {"ALLGATHER_coalesced", FrKind::allgather_coalesced},
    {"REDUCE_SCATTER_coalesced", FrKind::reduce_scatter_coalesced},
    {"all_gather_base", FrKind::all_gather_base},
}};

}  // namespace

FrKind fr_kind(std::string_view op) {
  for (const auto& [name, kind] : kKindNames)
    if (name == op) return kind;
  return FrKind::other;
}

// Collectives whose every member's output depends on every member's input: none completes before
// each member has called it (a broadcast's root, or a small send, may finish before its peers do).
bool needs_every_member(FrKind k) {
  switch (k) {
    case FrKind::all_reduce:
    case FrKind::allreduce_coalesced:
    case FrKind::all_reduce_barrier:
    case FrKind::all_gather:
    case FrKind::all_gather_base:
    case FrKind::all_gather_into_tensor_coalesced:
    case FrKind::reduce_scatter:
    case FrKind::reduce_scatter_base:
    case FrKind::reduce_scatter_tensor_coalesced:
    case FrKind::allgather_coalesced:  // the closers of coalesced all_gathers and reduce_scatters
    case FrKind::reduce_scatter_coalesced:
    case FrKind::all_to_all:
    case FrKind::barrier: return true;
    default: return false;
  }
}

}  // namespace ppspec::traces
