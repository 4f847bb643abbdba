// One Flight Recorder dump's content, from the JSON value its file holds (a pickle is read into the
// same value): the group table, then every entry, each field typed and range-checked.
#include "traces/fr_record.h"

#include <algorithm>
#include <map>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/json_depth.h"
#include "core/printable.h"
#include "traces/fr_fields.h"

namespace ppspec::traces {
namespace {

using Json = nlohmann::json;

constexpr size_t kNameMax = 4096;

std::vector<int> parse_ranks(const std::string& text, const FrPlace& at) {
  const Json j =
      core::json_too_deep(text, 1) ? Json(Json::value_t::discarded) : Json::parse(text, nullptr, false);  // "[0, 1]"
  if (j.is_discarded() || !j.is_array() || j.size() > static_cast<size_t>(kFrRanksMax))
    at.fail(fmt::format("ranks '{}' are not a list of at most {} ranks", core::printable(text, 60), kFrRanksMax));
  std::vector<int> ranks;
  for (size_t i = 0; i < j.size(); ++i)
    ranks.push_back(
        static_cast<int>(at.integer_value(j[i], fmt::format("rank {} of the group", i), 0, kFrRanksMax - 1)));
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    at.fail(fmt::format("ranks '{}' name a rank twice", core::printable(text, 60)));
  return ranks;
}

void read_groups(const Json& j, FrDump& d) {
  const FrPlace top{d.file, "the dump"};
  const auto it = j.find("pg_config");
  if (it == j.end()) top.fail("no 'pg_config': the process-group table, which says each group's members, is needed");
  if (!it->is_object() || it->size() > kFrGroupsMax)
    top.fail(fmt::format("'pg_config' is not a table of at most {} groups", kFrGroupsMax));
  for (const auto& [key, g] : it->items()) {
    const FrPlace at{d.file, fmt::format("pg_config '{}'", core::printable(key, 40))};
    FrGroup group{at.text(g, "name", kNameMax), at.text(g, "desc", kNameMax),
                  parse_ranks(at.text(g, "ranks", 1 << 20), at), false};
    // PyTorch keys the table by the group's name; entries name their group the same way.
    if (group.name != key)
      at.fail(fmt::format("its name is '{}': a group is keyed by its name", core::printable(group.name, 40)));
    // ProcessGroupGloo records its group in its constructor, before Python names it: every Gloo group
    // lands in this one nameless slot, and the entries name groups the table does not list.
    if (key.empty()) {
      d.placeholder_table = true;
      continue;
    }
    d.groups.emplace(key, std::move(group));
  }
}

// "nccl:send 0->1" (group-local ranks: this rank 0 sends to 1), "nccl:recv 1<-0", "gloo:broadcast".
void parse_name(FrEntry& e, const FrGroup& g, const FrDump& d, const FrPlace& at) {
  std::string name = e.profiling_name;
  if (const auto colon = name.find(':'); colon != std::string::npos) {
    e.backend = name.substr(0, colon);
    name = name.substr(colon + 1);
  }
  const auto space = name.find(' ');
  e.op = name.substr(0, space);
  if (e.op.empty())
    at.fail(fmt::format("'profiling_name' '{}' names no operation", core::printable(e.profiling_name, 60)));
  e.kind = fr_kind(e.op);
  const bool send = e.kind == FrKind::send, recv = e.kind == FrKind::recv;
  if (send || recv) e.is_p2p = true;
  if (!send && !recv) return;
  if (g.inferred)
    at.fail(fmt::format(
        "'{}': a p2p record on group '{}', which the dump's table does not list: its members, and so the peer, are "
        "unknown",
        core::printable(e.profiling_name, 60), core::printable(g.name, 40)));
  const std::string rest = space == std::string::npos ? "" : name.substr(space + 1);
  const auto arrow = rest.find(send ? "->" : "<-");
  int64_t self = -1, peer = -1;
  const int64_t top = static_cast<int64_t>(g.ranks.size()) - 1;
  if (arrow == std::string::npos)
    at.fail(fmt::format("a p2p operation '{}' without its peers (expected '{} A{}B', group-local ranks)",
                        core::printable(e.profiling_name, 60), e.op, send ? "->" : "<-"));
  if (!parse_decimal(rest.substr(0, arrow), 0, kFrRanksMax - 1, self) ||
      !parse_decimal(rest.substr(arrow + 2), 0, kFrRanksMax - 1, peer))
    at.fail(fmt::format(
        "a p2p operation '{}' whose peers are not group-local ranks (expected '{} A{}B', A and B in [0, {}))",
        core::printable(e.profiling_name, 60), e.op, send ? "->" : "<-", kFrRanksMax));
  if (self > top || peer > top)
    at.fail(fmt::format("'{}' names group-local rank {}, but group '{}' has {} members",
                        core::printable(e.profiling_name, 60), std::max(self, peer), g.name, g.ranks.size()));
  if (g.ranks[static_cast<size_t>(self)] != d.rank)
    at.fail(
        fmt::format("'{}': group-local rank {} of group '{}' is global rank {} (pg_config), but this is rank {}'s dump",
                    core::printable(e.profiling_name, 60), self, g.name, g.ranks[static_cast<size_t>(self)], d.rank));
  e.peer_local = static_cast<int>(peer);
  e.peer = g.ranks[static_cast<size_t>(peer)];
}

FrState parse_state(const std::string& s, const FrPlace& at) {
  if (s == "scheduled") return FrState::scheduled;
  if (s == "started") return FrState::started;
  if (s == "completed") return FrState::completed;
  at.fail(fmt::format("state '{}' is not scheduled, started or completed", core::printable(s, 40)));
}

// The stacks of one dump's entries, each kept once.
using Stacks = std::map<FrStack, std::shared_ptr<const FrStack>>;

std::shared_ptr<const FrStack> read_frames(const Json& j, const FrPlace& at, Stacks& stacks) {
  const auto it = j.find("frames");
  if (it == j.end() || it->is_null()) return nullptr;
  if (!it->is_array() || it->size() > kFrFramesMax)
    at.fail(fmt::format("'frames' is not a list of at most {} frames", kFrFramesMax));
  FrStack frames;
  frames.reserve(it->size());
  for (const Json& f : *it)
    frames.push_back(
        {at.text(f, "name", kNameMax), at.text(f, "filename", kNameMax), at.integer(f, "line", 0, INT32_MAX)});
  auto [kept, fresh] = stacks.try_emplace(std::move(frames), nullptr);
  if (fresh) kept->second = std::make_shared<const FrStack>(kept->first);
  return kept->second;
}

// The group an entry names: `process_group` [name, desc] where present, else its pg_id as a name. A
// group the table does not list is one of its entries' own where the table is Gloo's placeholder.
const FrGroup& group_of(const Json& j, FrEntry& e, FrDump& d, const FrPlace& at) {
  const auto pg = j.find("process_group");
  std::string desc;
  if (pg != j.end()) {
    if (!pg->is_array() || pg->size() != 2 || !(*pg)[0].is_string())
      at.fail(fmt::format("'process_group' is {}: expected [name, desc]", core::printable(pg->dump(), 60)));
    e.group = (*pg)[0].get<std::string>();
    if ((*pg)[1].is_string()) desc = (*pg)[1].get<std::string>();
  } else {
    e.group = std::to_string(e.pg_id);
  }
  auto g = d.groups.find(e.group);
  if (g == d.groups.end() && d.placeholder_table && !e.group.empty() && e.group.size() <= kNameMax &&
      d.groups.size() < kFrGroupsMax)
    g = d.groups.emplace(e.group, FrGroup{e.group, desc, {}, true}).first;
  if (g == d.groups.end())
    at.fail(fmt::format("names process group '{}', which pg_config does not list", core::printable(e.group, 40)));
  if (!g->second.inferred && std::find(g->second.ranks.begin(), g->second.ranks.end(), d.rank) == g->second.ranks.end())
    at.fail(fmt::format("is on group '{}', whose members [{}] do not include this dump's rank {}", e.group,
                        fmt::join(g->second.ranks, ", "), d.rank));
  return g->second;
}

// `thread_id` is a decimal string in PyTorch's dumps (an integer is taken too); either field may be
// absent in older ones.
std::string read_thread(const Json& j, const FrPlace& at) {
  if (!j.contains("thread_id") && !j.contains("thread_name")) return "";
  std::string id;
  if (j.contains("thread_id")) {
    const Json& v = j.at("thread_id");
    if (v.is_number_integer() || v.is_number_unsigned())
      id = v.dump();
    else
      id = at.text(j, "thread_id", 64);
  }
  const std::string name = j.contains("thread_name") ? at.text(j, "thread_name", kNameMax) : "";
  return id.empty() ? name : fmt::format("{} ({})", name, id);
}

FrEntry read_entry(const Json& j, size_t index, FrDump& d, Stacks& stacks) {
  FrPlace at{d.file, fmt::format("entry {}", index)};
  if (!j.is_object()) at.fail("expected an object");
  FrEntry e;
  e.record_id = at.integer(j, "record_id", 0, INT64_MAX);
  at.record = fmt::format("entry {} (record {})", index, e.record_id);
  e.pg_id = at.integer(j, "pg_id", 0, INT64_MAX);
  e.collective_seq_id = at.integer(j, "collective_seq_id", 0, INT64_MAX);
  e.p2p_seq_id = at.integer(j, "p2p_seq_id", 0, INT64_MAX);
  e.is_p2p = j.contains("is_p2p") && at.boolean(j, "is_p2p");
  e.profiling_name = at.text(j, "profiling_name", kNameMax);
  e.input_sizes = at.sizes(j, "input_sizes");
  e.input_dtypes = at.texts(j, "input_dtypes");
  if (j.contains("output_sizes")) e.output_sizes = at.sizes(j, "output_sizes");
  if (j.contains("output_dtypes")) e.output_dtypes = at.texts(j, "output_dtypes");
  e.state = parse_state(at.text(j, "state", 64), at);
  e.created_ns = at.optional_time(j, "time_created_ns");
  e.started_ns = at.optional_time(j, "time_discovered_started_ns");
  e.completed_ns = at.optional_time(j, "time_discovered_completed_ns");
  e.stack = read_frames(j, at, stacks);
  e.thread = read_thread(j, at);
  if (j.contains("op_id")) e.op_id = at.integer(j, "op_id", 0, INT64_MAX);
  if (j.contains("timeout_ms")) e.timeout_ms = at.integer(j, "timeout_ms", 0, INT64_MAX);
  if (j.contains("retired")) e.retired = at.boolean(j, "retired");
  parse_name(e, group_of(j, e, d, at), d, at);
  return e;
}

}  // namespace

FrDump fr_dump_from_json(const Json& j, const std::string& file, int rank) {
  const FrPlace top{file, "the dump"};
  if (!j.is_object() || !j.contains("version"))
    top.fail("not a Flight Recorder dump (expected an object with 'version', 'pg_config' and 'entries')");
  FrDump d;
  d.rank = rank;
  d.file = file;
  d.version = top.text(j, "version", 64);
  if (j.contains("comm_lib_version")) d.comm_lib_version = top.text(j, "comm_lib_version", 64);
  if (!d.version.starts_with("2."))
    top.fail(
        fmt::format("Flight Recorder format version '{}' is not supported (2.x is)", core::printable(d.version, 20)));
  read_groups(j, d);
  // A JSON dump with no entry leaves 'entries' out.
  const auto entries = j.find("entries");
  if (entries == j.end()) return d;
  if (!entries->is_array() || entries->size() > kFrEntriesMax)
    top.fail(fmt::format("'entries': expected a list of at most {} records", kFrEntriesMax));
  d.entries.reserve(entries->size());
  Stacks stacks;
  std::map<int64_t, size_t> seen;  // record_id -> its entry: PyTorch numbers every record once
  for (size_t i = 0; i < entries->size(); ++i) {
    d.entries.push_back(read_entry((*entries)[i], i, d, stacks));
    const auto [it, fresh] = seen.emplace(d.entries.back().record_id, i);
    if (!fresh)
      top.fail(fmt::format("entry {} repeats record_id {} of entry {}: one record written twice (a corrupt dump)", i,
                           d.entries.back().record_id, it->second));
  }
  // Gloo never records a state past `scheduled`: its states say nothing of progress.
  d.progress_recorded =
      std::none_of(d.entries.begin(), d.entries.end(), [](const FrEntry& e) { return e.backend == "gloo"; });
  return d;
}

}  // namespace ppspec::traces
