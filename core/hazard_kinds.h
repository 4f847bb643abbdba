// The kinds of hazard ppspec notes (DESIGN §3 "Hazards"), one table for the producers that note them
// and for the loader that checks an [expect] hazards list against what can ever be noted.
#pragma once

#include <array>
#include <string_view>

namespace ppspec::core {

// Noted by the simulator in any run.
inline constexpr std::string_view kHazardModuleLoadInFlight = "module-load-in-flight";
inline constexpr std::string_view kHazardMallocInFlight = "malloc-in-flight";
inline constexpr std::string_view kHazardDeviceSyncInFlight = "device-sync-in-flight";
inline constexpr std::string_view kHazardCrossCommunicatorOrder = "cross-communicator-order";
// Noted by the serving monitors (serving scenarios only).
inline constexpr std::string_view kHazardFeedbackDuringWarmup = "feedback-during-warmup";
inline constexpr std::string_view kHazardModuleLoadAfterWarmup = "module-load-after-warmup";

struct HazardKindName {
  std::string_view name;
  bool serving_only;
};

inline constexpr std::array<HazardKindName, 6> kHazardKinds{{
    {kHazardModuleLoadInFlight, false},
    {kHazardMallocInFlight, false},
    {kHazardDeviceSyncInFlight, false},
    {kHazardCrossCommunicatorOrder, false},
    {kHazardFeedbackDuringWarmup, true},
    {kHazardModuleLoadAfterWarmup, true},
}};

}  // namespace ppspec::core
