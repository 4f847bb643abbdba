#include "traces/flight_recorder.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <tuple>

#include "core/error.h"
#include "core/printable.h"
#include "traces/pickle.h"

namespace ppspec::traces {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// A field of record `index` of `file`, of the expected JSON type.
template <typename T>
T field(const Json& j, const char* key, const std::string& where, const std::string& file) {
  if (!j.contains(key)) throw core::InputError(file, 0, fmt::format("{}: no '{}'", where, key));
  try {
    return j.at(key).get<T>();
  } catch (const std::exception&) {
    throw core::InputError(file, 0, fmt::format("{}: '{}' has the wrong type ({})", where, key, j.at(key).type_name()));
  }
}

// "nccl:send 0->1" -> send, peer 1; "nccl:recv 1<-0" -> recv, peer 0; "nccl:broadcast" -> broadcast.
void parse_name(FrEntry& e, const std::string& where, const std::string& file) {
  std::string name = e.profiling_name;
  if (const auto colon = name.find(':'); colon != std::string::npos) name = name.substr(colon + 1);
  const auto space = name.find(' ');
  e.op = name.substr(0, space);
  if (!e.is_p2p) return;
  static const std::regex pair(R"((\d+)(->|<-)(\d+))");
  std::smatch m;
  const std::string rest = space == std::string::npos ? "" : name.substr(space + 1);
  if (!std::regex_match(rest, m, pair))
    throw core::InputError(file, 0, fmt::format("{}: a p2p operation '{}' without its peers (expected 'send A->B' or "
                                                "'recv A<-B')", where, core::printable(e.profiling_name, 60)));
  e.peer = std::stoi(m[3].str());
}

FrEntry read_entry(const Json& j, size_t index, const std::string& file) {
  const std::string where = fmt::format("entry {}", index);
  if (!j.is_object()) throw core::InputError(file, 0, where + ": expected an object");
  FrEntry e;
  e.record_id = field<int64_t>(j, "record_id", where, file);
  e.pg_id = field<int64_t>(j, "pg_id", where, file);
  e.collective_seq_id = field<int64_t>(j, "collective_seq_id", where, file);
  e.p2p_seq_id = field<int64_t>(j, "p2p_seq_id", where, file);
  e.is_p2p = j.contains("is_p2p") ? field<bool>(j, "is_p2p", where, file) : false;
  e.profiling_name = field<std::string>(j, "profiling_name", where, file);
  e.input_sizes = field<std::vector<std::vector<int64_t>>>(j, "input_sizes", where, file);
  e.input_dtypes = field<std::vector<std::string>>(j, "input_dtypes", where, file);
  e.state = field<std::string>(j, "state", where, file);
  if (e.state != "scheduled" && e.state != "started" && e.state != "completed")
    throw core::InputError(file, 0, fmt::format("{} (record {}): state '{}' is not scheduled, started or completed", where,
                                                e.record_id, core::printable(e.state, 40)));
  parse_name(e, fmt::format("{} (record {})", where, e.record_id), file);
  // Times are optional and null where not discovered.
  auto time = [&](const char* key) { return j.contains(key) && j.at(key).is_number_integer() ? j.at(key).get<int64_t>() : 0; };
  e.created_ns = time("time_created_ns");
  e.started_ns = time("time_discovered_started_ns");
  e.completed_ns = time("time_discovered_completed_ns");
  return e;
}

std::vector<int> parse_ranks(const std::string& text, const std::string& where, const std::string& file) {
  // "[0, 1]"
  std::vector<int> ranks;
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array()) throw core::InputError(file, 0, fmt::format("{}: ranks '{}' are not a list", where, core::printable(text, 60)));
  for (const Json& r : j) {
    if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() >= kFrRanksMax)
      throw core::InputError(file, 0, fmt::format("{}: rank {} out of [0, {})", where, r.dump(), kFrRanksMax));
    ranks.push_back(r.get<int>());
  }
  return ranks;
}

// One dump's content, whichever format it came in (the pickle holds the same objects).
FrDump dump_of(const Json& j, const std::string& file, int rank) {
  if (!j.is_object() || !j.contains("version") || !j.contains("entries"))
    throw core::InputError(file, 0, "not a Flight Recorder dump (expected 'version' and 'entries')");
  FrDump d;
  d.rank = rank;
  d.file = file;
  d.version = field<std::string>(j, "version", "the dump", file);
  if (!d.version.starts_with("2."))
    throw core::InputError(file, 0, fmt::format("Flight Recorder format version '{}' is not supported (2.x is)", core::printable(d.version, 20)));
  if (j.contains("pg_config")) {
    for (const auto& [id, g] : j.at("pg_config").items()) {
      int64_t pg = 0;
      if (std::from_chars(id.data(), id.data() + id.size(), pg).ec != std::errc{})
        throw core::InputError(file, 0, fmt::format("pg_config: process group id '{}' is not a number", core::printable(id, 20)));
      const std::string where = "pg_config " + id;
      d.groups[pg] = FrGroup{field<std::string>(g, "name", where, file), field<std::string>(g, "desc", where, file),
                             parse_ranks(field<std::string>(g, "ranks", where, file), where, file)};
    }
  }
  const Json& entries = j.at("entries");
  if (!entries.is_array() || entries.size() > kFrEntriesMax)
    throw core::InputError(file, 0, fmt::format("'entries': expected a list of at most {} records", kFrEntriesMax));
  for (size_t i = 0; i < entries.size(); ++i) d.entries.push_back(read_entry(entries[i], i, file));
  return d;
}

std::string read_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw core::InputError(file, 0, "cannot open the Flight Recorder dump");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

FrDump read_fr_json(const std::string& file, int rank) {
  const Json j = Json::parse(read_bytes(file), nullptr, false);
  if (j.is_discarded()) throw core::InputError(file, 0, "not JSON: a truncated or corrupt Flight Recorder dump");
  return dump_of(j, file, rank);
}

FrDump read_fr_pickle(const std::string& file, int rank) { return dump_of(unpickle(read_bytes(file), file), file, rank); }

namespace {

// Dumps of one run agree on the format and on every process group's members; dumps of two runs
// in one folder would be compared operation by operation and blamed for what no run did.
void check_one_run(const std::vector<FrDump>& dumps) {
  for (size_t i = 1; i < dumps.size(); ++i) {
    const FrDump& a = dumps.front();
    const FrDump& b = dumps[i];
    if (a.version != b.version)
      throw core::InputError(b.file, 0, fmt::format("mixed runs in one folder? format version {} here, {} in {}", b.version,
                                                    a.version, a.file));
    for (const auto& [pg, g] : b.groups) {
      const auto it = a.groups.find(pg);
      if (it != a.groups.end() && it->second.ranks != g.ranks)
        throw core::InputError(b.file, 0, fmt::format("mixed runs in one folder? pg {} has members [{}] here, [{}] in {}", pg,
                                                      fmt::join(g.ranks, ", "), fmt::join(it->second.ranks, ", "), a.file));
    }
  }
}

}  // namespace

bool is_fr_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  for (const auto& f : fs::directory_iterator(dir, ec))
    if (f.path().filename().string().starts_with("rank_")) return true;
  return fs::is_directory(fs::path(dir) / "json", ec) || fs::is_directory(fs::path(dir) / "pickle", ec);
}

std::vector<FrDump> read_fr_dir(const std::string& dir) {
  // The corpus layout keeps the JSON dumps in json/ and the pickles in pickle/; a folder of dumps
  // is read as it is: rank_N.json (JSON) or rank_N (pickle, as PyTorch names them).
  fs::path base = fs::path(dir);
  if (fs::is_directory(base / "json"))
    base /= "json";
  else if (fs::is_directory(base / "pickle"))
    base /= "pickle";
  static const std::regex name(R"(rank_(\d+)(\.json)?)");
  std::vector<std::tuple<int, std::string, bool>> files;  // rank, file, JSON
  for (const auto& f : fs::directory_iterator(base)) {
    std::smatch m;
    const std::string n = f.path().filename().string();
    if (!std::regex_match(n, m, name)) continue;
    const int rank = std::stoi(m[1].str().substr(0, 6));
    if (m[1].length() > 6 || rank >= kFrRanksMax)
      throw core::InputError(f.path().string(), 0, fmt::format("rank {} out of [0, {})", m[1].str(), kFrRanksMax));
    files.emplace_back(rank, f.path().string(), m[2].matched);
  }
  if (files.empty())
    throw core::InputError(base.string(), 0, "no Flight Recorder dump here (expected rank_N.json or rank_N files, one per rank)");
  std::sort(files.begin(), files.end());
  std::vector<FrDump> dumps;
  for (const auto& [rank, file, json] : files) {
    if (!dumps.empty() && dumps.back().rank == rank)
      throw core::InputError(file, 0, fmt::format("a second dump of rank {} in one folder (mixed runs or formats?)", rank));
    dumps.push_back(json ? read_fr_json(file, rank) : read_fr_pickle(file, rank));
  }
  check_one_run(dumps);
  return dumps;
}

}  // namespace ppspec::traces
