// Hand-made engine probe events for monitor tests: an event at an engine step, its integers kept
// alive by the caller's storage (events carry views).
#pragma once

#include <deque>
#include <string_view>
#include <vector>

#include "core/event.h"

namespace ppspec::testing {

struct ProbeEvents {
  std::deque<std::vector<int64_t>> storage;

  core::Event make(core::EventKind kind, core::RankId rank, int64_t step, int64_t req, std::vector<int64_t> ints,
                   int64_t value = -1, core::ProbeSubject subject = {}, std::string_view comm = {}) {
    core::Event e;
    e.t = 1000 * (step + 1);
    e.kind = kind;
    e.rank = rank;
    e.step = step;
    e.req = req;
    e.ints = storage.emplace_back(std::move(ints));
    e.value = value;
    e.subject = subject;
    e.comm = comm;
    return e;
  }
};

}  // namespace ppspec::testing
