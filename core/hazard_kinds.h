// The kinds of hazard ppspec notes (DESIGN §3 "Hazards"), one table for the producers that note them
// and for the loader that checks an [expect] hazards list against what can ever be noted.
#pragma once

#include <array>

#include "core/finding_kind.h"

namespace ppspec::core {

struct HazardKindName {
  FindingKind kind;
  bool serving_only;  // noted by the serving monitors only; the others by the simulator in any run
};

inline constexpr std::array<HazardKindName, 6> kHazardKinds{{
    {FindingKind::module_load_in_flight, false},
    {FindingKind::malloc_in_flight, false},
    {FindingKind::device_sync_in_flight, false},
    {FindingKind::cross_communicator_order, false},
    {FindingKind::feedback_during_warmup, true},
    {FindingKind::module_load_after_warmup, true},
}};

}  // namespace ppspec::core
