// The shape rules of Communicator::all_to_all (equal splits), shared by the
// simulator and the real backend so both refuse the same calls with the same
// words.
#pragma once

#include <string>
#include <string_view>

#include "core/buffer.h"

namespace ppspec::core {

// Why all_to_all(send, recv) on a communicator of `members` ranks is bad usage;
// empty if it is fine. PyTorch's all_to_all_single requires sizes divisible by
// the group size; NCCL's grouped sends and receives must not read a buffer
// another of them writes, so send and recv are distinct.
std::string all_to_all_error(std::string_view comm, const Buffer& send, const Buffer& recv, int members);

}  // namespace ppspec::core
