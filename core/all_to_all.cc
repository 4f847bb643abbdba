#include "core/all_to_all.h"

#include <fmt/format.h>

#include <cstdint>

namespace ppspec::core {

std::string all_to_all_error(std::string_view comm, const Buffer& send, const Buffer& recv, int members) {
  if (members <= 0 || send.count() % members != 0)
    return fmt::format(
        "all_to_all on '{}': send buffer holds {} elements, not "
        "a multiple of the {} members",
        comm, send.count(), members);
  if (recv.count() < send.count())
    return fmt::format("all_to_all on '{}': receive buffer holds {} elements, needs {}", comm, recv.count(),
                       send.count());
  if (send.backed() && recv.backed()) {
    // Only whether the ranges meet is asked, never an address's value:
    // deterministic.
    const auto s = reinterpret_cast<uintptr_t>(send.data());
    const auto r = reinterpret_cast<uintptr_t>(recv.data());
    if (s < r + recv.bytes() && r < s + send.bytes())
      return fmt::format(
          "all_to_all on '{}': send and receive buffers overlap "
          "(not supported in place)",
          comm);
  }
  return {};
}

}  // namespace ppspec::core
