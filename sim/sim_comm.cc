#include "sim/sim_comm.h"

#include <algorithm>
#include <climits>

#include "core/assert.h"
#include "sim/comm_handle.h"
#include "sim/device.h"
#include "sim/sim_runtime.h"

namespace ppspec::sim {

SimComm::SimComm() = default;
SimComm::~SimComm() = default;  // here, where SimCommHandle is complete

int SimComm::crank_of(core::RankId r) const {
  auto it = std::lower_bound(crank_index.begin(), crank_index.end(), std::pair<core::RankId, int>{r, INT32_MIN});
  if (it == crank_index.end() || it->first != r) return -1;
  PPSPEC_ASSERT(members[static_cast<size_t>(it->second)] == r);
  return it->second;
}

CollSlot* SimComm::slot(int64_t k) {
  if (k < slot_base) return nullptr;
  while (static_cast<int64_t>(slots.size()) <= k - slot_base) {
    CollSlot& s = slots.emplace_back();
    const auto n = members.size();
    s.ops.assign(n, nullptr);
    s.units.assign(n, -1);
    s.posts.resize(n);
    s.launched.assign(n, 0);
    s.done.assign(n, 0);
  }
  return &slots[static_cast<size_t>(k - slot_base)];
}

const CollSlot* SimComm::find_slot(int64_t k) const {
  if (k < slot_base || k - slot_base >= static_cast<int64_t>(slots.size())) return nullptr;
  return &slots[static_cast<size_t>(k - slot_base)];
}

OthersUnits others_units(const std::vector<int64_t>& units) {
  OthersUnits o;
  for (size_t m = 1; m < units.size(); ++m)
    if (units[m] < units[o.lowest]) o.lowest = m;
  if (!units.empty()) o.lowest_units = units[o.lowest];
  for (size_t m = 0; m < units.size(); ++m)
    if (m != o.lowest) o.second_units = std::min(o.second_units, units[m]);
  return o;
}

SimDevice& member_device(const SimRuntime& rt, const SimComm& comm, int crank) {
  return rt.device_impl(comm.members.at(static_cast<size_t>(crank)));
}

}  // namespace ppspec::sim
