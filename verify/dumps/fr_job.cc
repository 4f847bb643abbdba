#include "verify/dumps/fr_job.h"

#include <algorithm>
#include <iterator>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

#include "core/assert.h"
#include "verify/dumps/fr_coalesced.h"
#include "verify/dumps/fr_p2p_places.h"

namespace ppspec::verify {
namespace {

using traces::FrDump;
using traces::FrEntry;
using traces::FrKind;

std::string dtype_name(const std::string& torch) {
  static const std::map<std::string, std::string> names = {{"Long", "i64"},
                                                           {"Int", "i32"},
                                                           {"Half", "f16"},
                                                           {"Float", "f32"},
                                                           {"BFloat16", "bf16"},
                                                           {"Byte", "u8"},
                                                           {"Double", "f64"},
                                                           {"Char", "i8"},
                                                           {"Bool", "bool"},
                                                           {"Short", "i16"},
                                                           {"UNKNOWN_SCALAR", "undefined"}};
  const auto it = names.find(torch);
  return it == names.end() ? torch : it->second;
}

bool by_seq(const FrOp& a, const FrOp& b) {
  return std::tie(a.entry->collective_seq_id, a.order) < std::tie(b.entry->collective_seq_id, b.order);
}

size_t member_index(const FrJobGroup& g, int rank) {
  const auto it = std::find(g.ranks.begin(), g.ranks.end(), rank);
  PPSPEC_ASSERT(it != g.ranks.end(), "rank {} is not a member of group '{}' (the reader checks it)", rank, g.name);
  return static_cast<size_t>(it - g.ranks.begin());
}

void finish_lanes(FrJob& job) {
  for (FrJobGroup& g : job.groups) {
    PPSPEC_ASSERT(g.lanes.size() == g.ranks.size() && g.dumped.size() == g.ranks.size(),
                  "group '{}': {} lanes, {} members", g.name, g.lanes.size(), g.ranks.size());
    for (size_t m = 0; m < g.ranks.size(); ++m) g.dumped[m] = job.by_rank.count(g.ranks[m]) > 0;
    for (auto& lane : g.lanes) {
      std::sort(lane.begin(), lane.end(), by_seq);
      // PyTorch numbers a group's collectives from 1.
      for (FrOp& op : lane) op.position = std::max<int64_t>(op.entry->collective_seq_id - 1, 0);
      if (!lane.empty()) g.first_common_seq = std::max(g.first_common_seq, lane.front().entry->collective_seq_id);
    }
  }
}

struct Builder {
  FrJob& job;
  std::map<std::pair<std::string, std::vector<int>>, size_t> group_index;
  std::map<std::tuple<size_t, int, int>, size_t> channel_index;

  size_t group_of(const FrDump& d, const FrEntry& e) {
    const traces::FrGroup& table = d.groups.at(e.group);
    auto [it, made] = group_index.try_emplace({table.name, table.ranks}, job.groups.size());
    if (made) {
      job.groups.push_back(FrJobGroup{table.name, table.desc, table.ranks, {}, {}, 0, table.inferred});
      job.groups.back().lanes.resize(table.ranks.size());
      job.groups.back().dumped.resize(table.ranks.size());
    }
    PPSPEC_ASSERT(it->second < job.groups.size());
    return it->second;
  }

  void add(const FrDump& d, const FrCoalescing& c) {
    for (size_t i = 0; i < d.entries.size(); ++i) {
      const FrEntry& e = d.entries[i];
      if (c.in_composite[i]) continue;  // a member of a coalesced group of collectives: part of its closer's call
      const bool composite = !c.members[i].empty();
      if (traces::is_closer(e.kind) && !composite)
        continue;  // the marker closing a group of p2p (or of records dropped)
      const size_t gi = group_of(d, e);
      FrOp op{&d, &e, gi, i, -1, c.state[i], c.closer[i], c.members[i]};
      if (composite) op.coalesced = i;
      FrJobGroup& g = job.groups[gi];
      if (!e.is_p2p) {
        g.lanes[member_index(g, d.rank)].push_back(std::move(op));
        continue;
      }
      const bool send = e.kind == FrKind::send;
      const int src = send ? d.rank : e.peer, dst = send ? e.peer : d.rank;
      auto [ch, fresh] = channel_index.try_emplace({gi, src, dst}, job.channels.size());
      if (fresh) job.channels.push_back(FrChannel{gi, src, dst, {}, {}, true});
      (send ? job.channels[ch->second].sends : job.channels[ch->second].recvs).push_back(std::move(op));
    }
  }
};

}  // namespace

std::string FrJobGroup::label() const {
  if (desc.empty() || desc == "undefined" || desc == name) return "pg " + name;
  return fmt::format("pg {} ({})", name, desc);
}

FrJob make_job(const std::vector<FrDump>& dumps) {
  FrJob job;
  for (const FrDump& d : dumps) {
    job.dumps.push_back(&d);
    job.by_rank[d.rank] = &d;
    job.dropped[d.rank] = d.entries.empty() ? 0 : d.entries.front().record_id;
    job.timing[d.rank] = std::any_of(d.entries.begin(), d.entries.end(), [](const FrEntry& e) {
      return e.state == traces::FrState::started || e.started_ns > 0;
    });
    job.progress = job.progress && d.progress_recorded;
  }
  Builder builder{job, {}, {}};
  for (const FrDump& d : dumps) {
    FrCoalescing c = coalesced_groups(d);
    builder.add(d, c);
    job.states[d.rank] = std::move(c.state);
  }
  // Channels in (group, src, dst) order, whatever order the dumps came in.
  std::sort(job.channels.begin(), job.channels.end(), [](const FrChannel& a, const FrChannel& b) {
    return std::tie(a.group, a.src, a.dst) < std::tie(b.group, b.src, b.dst);
  });
  finish_lanes(job);
  place_p2p(job);
  std::set<int> missing;
  for (const FrJobGroup& g : job.groups)
    for (size_t m = 0; m < g.ranks.size(); ++m)
      if (!g.dumped[m]) missing.insert(g.ranks[m]);
  job.missing.assign(missing.begin(), missing.end());
  PPSPEC_ASSERT(job.dumps.size() == dumps.size() && std::is_sorted(job.missing.begin(), job.missing.end()));
  return job;
}

std::vector<const FrEntry*> records_of(const FrOp& op) {
  std::vector<const FrEntry*> out;
  for (size_t m : op.members) out.push_back(&op.dump->entries.at(m));
  out.push_back(op.entry);
  return out;
}

std::string describe(const FrEntry& e, bool with_op) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < e.input_sizes.size(); ++i)
    parts.push_back(fmt::format("{} [{}]", i < e.input_dtypes.size() ? dtype_name(e.input_dtypes[i]) : "?",
                                fmt::join(e.input_sizes[i], ", ")));
  // Gathers and scatters pair on their outputs too.
  if (e.output_sizes != e.input_sizes && !e.output_sizes.empty()) {
    std::vector<std::string> outs;
    for (size_t i = 0; i < e.output_sizes.size(); ++i)
      outs.push_back(fmt::format("{} [{}]", i < e.output_dtypes.size() ? dtype_name(e.output_dtypes[i]) : "?",
                                 fmt::join(e.output_sizes[i], ", ")));
    parts.push_back(fmt::format("-> {}", fmt::join(outs, ", ")));
  }
  const std::string data = fmt::format("{}", fmt::join(parts, ", "));
  return with_op ? fmt::format("{} {}", e.op, data) : data;
}

std::string describe(const FrOp& op, bool with_op) {
  if (!op.composite()) return describe(*op.entry, with_op);
  std::vector<std::string> members;
  for (size_t m : op.members) {
    if (members.size() == 8) {
      members.push_back(fmt::format("… {} more", op.members.size() - 8));
      break;
    }
    members.push_back(describe(op.dump->entries.at(m)));
  }
  return fmt::format("{} of {} ({})", op.entry->op, op.members.size(), fmt::join(members, "; "));
}

namespace {

int64_t elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n = d != 0 && n > INT64_MAX / d ? INT64_MAX : n * d;
  return n;
}

void add_tensors(std::string& key, const std::vector<std::vector<int64_t>>& sizes,
                 const std::vector<std::string>& dtypes) {
  for (size_t i = 0; i < sizes.size(); ++i)
    fmt::format_to(std::back_inserter(key), " {}:{}",
                   i < dtypes.size() ? std::string_view(dtypes[i]) : std::string_view("?"), elements(sizes[i]));
  key += " |";
}

std::string entry_key(const FrEntry& e, bool with_op) {
  std::string key = with_op ? e.op : "";
  switch (e.kind) {
    case FrKind::all_to_all:
      // Each rank records its own totals of uneven splits: only the dtypes must agree.
      for (const std::string& t : e.input_dtypes) key += " " + t;
      key += " |";
      for (const std::string& t : e.output_dtypes) key += " " + t;
      return key;
    case FrKind::gather:  // the root's outputs are the gathered list, everyone else's an undefined tensor
      add_tensors(key, e.input_sizes, e.input_dtypes);
      return key;
    case FrKind::scatter:  // recorded swapped: the inputs are each rank's output tensor
      add_tensors(key, e.input_sizes, e.input_dtypes);
      return key;
    default:
      add_tensors(key, e.input_sizes, e.input_dtypes);
      add_tensors(key, e.output_sizes, e.output_dtypes);
      return key;
  }
}

}  // namespace

std::string match_key(const FrOp& op, bool with_op) {
  if (!op.composite()) return entry_key(*op.entry, with_op);
  std::string key = op.entry->op + " {";
  for (size_t m : op.members) key += entry_key(op.dump->entries.at(m), true) + ";";
  return key + "}";
}

std::pair<int64_t, int64_t> all_to_all_totals(const FrEntry& e) {
  int64_t in = 0, out = 0;
  for (const auto& s : e.input_sizes) in += elements(s);
  for (const auto& s : e.output_sizes) out += elements(s);
  return {in, out};
}

std::vector<std::string> user_frames(const FrEntry& e, size_t max) {
  std::vector<std::string> out;
  for (const traces::FrFrame& f : e.frames()) {
    if (out.size() == max) break;
    // The library's own frames say nothing about the caller's code.
    if (f.file.find("torch/distributed/") != std::string::npos ||
        f.file.find("multiprocessing/") != std::string::npos || f.file.find("contextlib.py") != std::string::npos ||
        f.file == "<string>")
      continue;
    out.push_back(fmt::format("{} at {}:{}", f.name, f.file, f.line));
  }
  PPSPEC_ASSERT(out.size() <= max);
  return out;
}

std::string origin_of(const FrOp& op) {
  PPSPEC_ASSERT(op.dump != nullptr && op.entry != nullptr);
  const FrEntry& first = op.composite() ? op.dump->entries.at(op.members.front()) : *op.entry;
  std::string s = fmt::format("{} record {}", op.dump->file, first.record_id);
  const std::vector<std::string> frames = user_frames(first, 2);
  if (!frames.empty()) s += fmt::format(", called from {}", fmt::join(frames, " < "));
  return s;
}

}  // namespace ppspec::verify
