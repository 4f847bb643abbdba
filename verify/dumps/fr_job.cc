#include "verify/dumps/fr_job.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

#include "core/assert.h"

namespace ppspec::verify {
namespace {

using traces::FrDump;
using traces::FrEntry;

std::string dtype_name(const std::string& torch) {
  static const std::map<std::string, std::string> names = {{"Long", "i64"},   {"Int", "i32"},       {"Half", "f16"},
                                                           {"Float", "f32"},  {"BFloat16", "bf16"}, {"Byte", "u8"},
                                                           {"Double", "f64"}, {"Char", "i8"},       {"Bool", "bool"},
                                                           {"Short", "i16"}};
  const auto it = names.find(torch);
  return it == names.end() ? torch : it->second;
}

bool by_seq(const FrOp& a, const FrOp& b) {
  return std::tie(a.entry->collective_seq_id, a.order) < std::tie(b.entry->collective_seq_id, b.order);
}
bool by_p2p_seq(const FrOp& a, const FrOp& b) { return std::tie(a.entry->p2p_seq_id, a.order) < std::tie(b.entry->p2p_seq_id, b.order); }

size_t member_index(const FrJobGroup& g, int rank) {
  const auto it = std::find(g.ranks.begin(), g.ranks.end(), rank);
  PPSPEC_ASSERT(it != g.ranks.end(), "rank {} is not a member of group '{}' (the reader checks it)", rank, g.name);
  return static_cast<size_t>(it - g.ranks.begin());
}

// The records a `coalesced` record closes: those just before it on its group with its sequence id
// (a p2p group shares one p2p_seq_id). They take its state; `closer` says which record closed each.
void coalesced_groups(const FrDump& d, std::vector<traces::FrState>& state, std::vector<size_t>& closer) {
  state.resize(d.entries.size());
  closer.assign(d.entries.size(), SIZE_MAX);
  for (size_t i = 0; i < d.entries.size(); ++i) state[i] = d.entries[i].state;
  for (size_t i = 0; i < d.entries.size(); ++i) {
    const FrEntry& m = d.entries[i];
    if (m.op != "coalesced") continue;
    for (size_t j = i; j-- > 0;) {
      const FrEntry& e = d.entries[j];
      const bool same = e.group == m.group && e.is_p2p == m.is_p2p && e.op != "coalesced" &&
                        (m.is_p2p ? e.p2p_seq_id == m.p2p_seq_id : e.collective_seq_id == m.collective_seq_id);
      if (!same) break;
      state[j] = m.state;
      closer[j] = i;
    }
  }
  PPSPEC_ASSERT(state.size() == d.entries.size() && closer.size() == d.entries.size());
}

void finish_lanes(FrJob& job) {
  for (FrJobGroup& g : job.groups) {
    PPSPEC_ASSERT(g.lanes.size() == g.ranks.size() && g.dumped.size() == g.ranks.size(), "group '{}': {} lanes, {} members",
                  g.name, g.lanes.size(), g.ranks.size());
    for (size_t m = 0; m < g.ranks.size(); ++m) g.dumped[m] = job.by_rank.count(g.ranks[m]) > 0;
    for (auto& lane : g.lanes) {
      std::sort(lane.begin(), lane.end(), by_seq);
      // PyTorch numbers a group's collectives from 1.
      for (FrOp& op : lane) op.position = std::max<int64_t>(op.entry->collective_seq_id - 1, 0);
      if (!lane.empty()) g.first_common_seq = std::max(g.first_common_seq, lane.front().entry->collective_seq_id);
    }
  }
  for (FrChannel& c : job.channels) {
    for (auto* side : {&c.sends, &c.recvs}) {
      std::sort(side->begin(), side->end(), by_p2p_seq);
      for (size_t k = 0; k < side->size(); ++k) (*side)[k].position = static_cast<int64_t>(k);
    }
  }
}

}  // namespace

std::string FrJobGroup::label() const {
  if (desc.empty() || desc == "undefined" || desc == name) return "pg " + name;
  return fmt::format("pg {} ({})", name, desc);
}

FrJob make_job(const std::vector<FrDump>& dumps) {
  FrJob job;
  std::map<std::pair<std::string, std::vector<int>>, size_t> group_index;
  std::map<std::tuple<size_t, int, int>, size_t> channel_index;
  for (const FrDump& d : dumps) {
    job.dumps.push_back(&d);
    job.by_rank[d.rank] = &d;
    job.dropped[d.rank] = d.entries.empty() ? 0 : d.entries.front().record_id;
    job.timing[d.rank] = std::any_of(d.entries.begin(), d.entries.end(), [](const FrEntry& e) {
      return e.state == traces::FrState::started || e.started_ns > 0;
    });
  }
  std::map<int, std::vector<size_t>> closers;
  for (const FrDump& d : dumps) coalesced_groups(d, job.states[d.rank], closers[d.rank]);
  for (const FrDump& d : dumps) {
    const std::vector<traces::FrState>& states = job.states[d.rank];
    const std::vector<size_t>& closer = closers[d.rank];
    PPSPEC_ASSERT(states.size() == d.entries.size() && closer.size() == d.entries.size());
    for (size_t i = 0; i < d.entries.size(); ++i) {
      const FrEntry& e = d.entries[i];
      if (e.op == "coalesced") continue;  // the marker closing a coalesced group: its operations are entries of their own
      const traces::FrGroup& table = d.groups.at(e.group);
      auto [it, made] = group_index.try_emplace({table.name, table.ranks}, job.groups.size());
      if (made) {
        job.groups.push_back(FrJobGroup{table.name, table.desc, table.ranks, {}, {}, 0});
        job.groups.back().lanes.resize(table.ranks.size());
        job.groups.back().dumped.resize(table.ranks.size());
      }
      const FrOp op{&d, &e, it->second, i, -1, states[i], closer[i]};
      PPSPEC_ASSERT(it->second < job.groups.size());
      FrJobGroup& g = job.groups[it->second];
      if (!e.is_p2p) {
        g.lanes[member_index(g, d.rank)].push_back(op);
        continue;
      }
      const bool send = e.op == "send";
      const int src = send ? d.rank : e.peer, dst = send ? e.peer : d.rank;
      auto [c, fresh] = channel_index.try_emplace({it->second, src, dst}, job.channels.size());
      if (fresh) job.channels.push_back(FrChannel{it->second, src, dst, {}, {}});
      (send ? job.channels[c->second].sends : job.channels[c->second].recvs).push_back(op);
    }
  }
  // Channels in (group, src, dst) order, whatever order the dumps came in.
  std::sort(job.channels.begin(), job.channels.end(),
            [](const FrChannel& a, const FrChannel& b) { return std::tie(a.group, a.src, a.dst) < std::tie(b.group, b.src, b.dst); });
  finish_lanes(job);
  std::set<int> missing;
  for (const FrJobGroup& g : job.groups)
    for (size_t m = 0; m < g.ranks.size(); ++m)
      if (!g.dumped[m]) missing.insert(g.ranks[m]);
  job.missing.assign(missing.begin(), missing.end());
  PPSPEC_ASSERT(job.dumps.size() == dumps.size() && std::is_sorted(job.missing.begin(), job.missing.end()));
  return job;
}

std::string describe(const FrEntry& e, bool with_op) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < e.input_sizes.size(); ++i)
    parts.push_back(fmt::format("{} [{}]", i < e.input_dtypes.size() ? dtype_name(e.input_dtypes[i]) : "?", fmt::join(e.input_sizes[i], ", ")));
  // Gathers and scatters pair on their outputs too.
  if (e.output_sizes != e.input_sizes && !e.output_sizes.empty()) {
    std::vector<std::string> outs;
    for (size_t i = 0; i < e.output_sizes.size(); ++i)
      outs.push_back(fmt::format("{} [{}]", i < e.output_dtypes.size() ? dtype_name(e.output_dtypes[i]) : "?", fmt::join(e.output_sizes[i], ", ")));
    parts.push_back(fmt::format("-> {}", fmt::join(outs, ", ")));
  }
  const std::string data = fmt::format("{}", fmt::join(parts, ", "));
  return with_op ? fmt::format("{} {}", e.op, data) : data;
}

std::string match_key(const FrEntry& e, bool with_op) {
  std::string key = with_op ? e.op : "";
  auto add = [&](const std::vector<std::vector<int64_t>>& sizes, const std::vector<std::string>& dtypes) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      int64_t n = 1;
      for (int64_t d : sizes[i]) n = d != 0 && n > INT64_MAX / d ? INT64_MAX : n * d;
      key += fmt::format(" {}:{}", i < dtypes.size() ? dtypes[i] : "?", n);
    }
    key += " |";
  };
  add(e.input_sizes, e.input_dtypes);
  add(e.output_sizes, e.output_dtypes);
  return key;
}

std::vector<std::string> user_frames(const FrEntry& e, size_t max) {
  std::vector<std::string> out;
  for (const traces::FrFrame& f : e.frames) {
    if (out.size() == max) break;
    // The library's own frames say nothing about the caller's code.
    if (f.file.find("torch/distributed/") != std::string::npos || f.file.find("multiprocessing/") != std::string::npos ||
        f.file == "<string>")
      continue;
    out.push_back(fmt::format("{} at {}:{}", f.name, f.file, f.line));
  }
  PPSPEC_ASSERT(out.size() <= max);
  return out;
}

std::string origin_of(const FrOp& op) {
  PPSPEC_ASSERT(op.dump != nullptr && op.entry != nullptr);
  std::string s = fmt::format("{} record {}", op.dump->file, op.entry->record_id);
  const std::vector<std::string> frames = user_frames(*op.entry, 2);
  if (!frames.empty()) s += fmt::format(", called from {}", fmt::join(frames, " < "));
  return s;
}

}  // namespace ppspec::verify
