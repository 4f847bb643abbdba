// Basic vocabulary shared by every layer: ranks, virtual time, module-loading and concurrency modes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ppspec::core {

using RankId = int32_t;

// Time is virtual nanoseconds in the simulator and steady-clock nanoseconds on real hardware.
using Time = int64_t;
// The time of a finding that is not ours to give (imported dumps carry no clock of the run).
inline constexpr Time kNoTime = -1;
inline constexpr Time kNs = 1;
inline constexpr Time kUs = 1000;
inline constexpr Time kMs = 1000 * kUs;
inline constexpr Time kSec = 1000 * kMs;

// How kernel modules get loaded (DESIGN §2, R8).
enum class ModuleLoading : uint8_t { eager, lazy, jit };
std::string_view to_string(ModuleLoading m);
std::optional<ModuleLoading> parse_module_loading(std::string_view s);

// Whether two spinning communication kernels of different communicators can be resident together (R7).
enum class Concurrency : uint8_t { ok, serial };
std::string_view to_string(Concurrency c);
std::optional<Concurrency> parse_concurrency(std::string_view s);

// What the simulator does when positionally paired operations disagree (R5).
enum class OnMismatch : uint8_t { report, emulate };
std::string_view to_string(OnMismatch m);
std::optional<OnMismatch> parse_on_mismatch(std::string_view s);

}  // namespace ppspec::core
