// Which fields of two positionally paired operations differ: a fifo-misalignment's cause as data,
// for programs that judge a mismatch by what differs (which fields a Flight Recorder entry or
// NCCL's profiler can see), never by the words of its summary.
#pragma once

namespace ppspec::core {

struct OpFields {
  bool kind = false;
  bool dtype = false;
  bool count = false;
  bool root = false;
  bool label = false;
  bool capture = false;
  // The kinds differ and one of them is all_to_all: NCCL runs an all_to_all as sends and receives,
  // which never pair with a collective.
  bool all_to_all = false;
  bool any() const { return kind || dtype || count || root || label || capture; }
  bool operator==(const OpFields&) const = default;
};

}  // namespace ppspec::core
