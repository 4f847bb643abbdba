// Finding a job's Flight Recorder dumps: in a folder or named one by one, under PyTorch's file
// names (PREFIX + global rank: `rank_3`, `nccl_trace_rank_3`, whatever TORCH_FR_DUMP_TEMP_FILE
// said), in JSON or pickle (told by the content, not the name), all of one run.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "core/json_depth.h"
#include "core/printable.h"
#include "traces/flight_recorder.h"
#include "traces/fr_fields.h"
#include "traces/fr_record.h"
#include "traces/pickle.h"

namespace ppspec::traces {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr size_t kDumpBytesMax = size_t{1} << 32;  // 4 GiB: far past PyTorch's largest ring buffer

struct DumpName {
  std::string prefix;
  int64_t rank = -1;
};

// PREFIX + digits (+ .json | .pkl | .pickle), PREFIX of word characters and '-' as PyTorch's fr_trace
// accepts them; nullopt for other files (README.md, .keep).
std::optional<DumpName> dump_name(const std::string& filename) {
  std::string n = filename;
  for (const char* ext : {".json", ".pkl", ".pickle"})
    if (n.size() > std::string_view(ext).size() && n.ends_with(ext)) {
      n.resize(n.size() - std::string_view(ext).size());
      break;
    }
  size_t digits = n.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(n[digits - 1]))) --digits;
  if (digits == n.size()) return std::nullopt;
  for (size_t i = 0; i < digits; ++i)
    if (!std::isalnum(static_cast<unsigned char>(n[i])) && n[i] != '_' && n[i] != '-') return std::nullopt;
  DumpName d{n.substr(0, digits), -1};
  if (!parse_decimal(n.substr(digits), 0, kFrRanksMax - 1, d.rank)) d.rank = kFrRanksMax;  // refused by the caller
  return d;
}

std::string read_bytes(const std::string& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw core::InputError(file, 0, "named like a Flight Recorder dump, but not a regular file (a folder?)");
  const auto size = fs::file_size(file, ec);
  if (ec || size > kDumpBytesMax)
    throw core::InputError(file, 0, fmt::format("cannot read it, or it is larger than {} bytes", kDumpBytesMax));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw core::InputError(file, 0, "cannot open the Flight Recorder dump");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<size_t>(in.gcount()) != bytes.size()) throw core::InputError(file, 0, "cannot read the whole dump");
  return bytes;
}

// The first byte that is not white space.
char first_byte(const std::string& bytes) {
  for (char c : bytes)
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c;
  return '\0';
}

struct Candidate {
  DumpName name;
  std::string path;
};

// The candidates of one prefix: the one given, else the only one there is.
std::vector<Candidate> of_one_prefix(std::vector<Candidate> all, const std::optional<std::string>& prefix,
                                     const std::string& where, std::string& chosen) {
  std::map<std::string, size_t> prefixes;
  for (const Candidate& c : all) ++prefixes[c.name.prefix];
  if (prefix) {
    chosen = *prefix;
  } else if (prefixes.size() == 1) {
    chosen = prefixes.begin()->first;
  } else if (prefixes.size() > 1) {
    std::vector<std::string> named;
    for (const auto& [p, n] : prefixes) named.push_back(fmt::format("'{}' ({} files)", core::printable(p, 40), n));
    throw core::InputError(where, 0,
                           fmt::format("dumps under several file-name prefixes: {}; name the job's with --prefix",
                                       fmt::join(named, ", ")));
  }
  std::erase_if(all, [&](const Candidate& c) { return c.name.prefix != chosen; });
  if (all.empty())
    throw core::InputError(where, 0,
                           prefix ? fmt::format("no dump named '{}N' here (N: the rank)", core::printable(*prefix, 40))
                                  : "no Flight Recorder dump here (expected files named PREFIX + rank, such as rank_0, "
                                    "rank_0.json or nccl_trace_rank_0; one per rank)");
  return all;
}

FrDumpSet read_candidates(std::vector<Candidate> files, const std::string& prefix, const std::string& where) {
  std::sort(files.begin(), files.end(),
            [](const Candidate& a, const Candidate& b) { return a.name.rank < b.name.rank; });
  FrDumpSet set{{}, prefix, where};
  for (size_t i = 0; i < files.size(); ++i) {
    const Candidate& c = files[i];
    if (c.name.rank >= kFrRanksMax)
      throw core::InputError(c.path, 0, fmt::format("the rank in the file name is out of [0, {})", kFrRanksMax));
    if (i > 0 && files[i - 1].name.rank == c.name.rank)
      throw core::InputError(
          c.path, 0,
          fmt::format("a second dump of rank {} (also {}): mixed runs or formats?", c.name.rank, files[i - 1].path));
    set.dumps.push_back(read_fr_dump(c.path, static_cast<int>(c.name.rank)));
  }
  resolve_inferred_groups(set.dumps);
  check_fr_one_run(set.dumps);
  return set;
}

fs::path dump_folder(const std::string& dir) {
  // The corpus layout keeps the JSON dumps in json/ and the pickles in pickle/.
  const fs::path base(dir);
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(base, ec))
    if (dump_name(f.path().filename().string())) return base;
  if (fs::is_directory(base / "json", ec)) return base / "json";
  if (fs::is_directory(base / "pickle", ec)) return base / "pickle";
  return base;
}

}  // namespace

const char* to_string(FrState s) {
  switch (s) {
    case FrState::scheduled: return "scheduled";
    case FrState::started: return "started";
    case FrState::completed: return "completed";
  }
  return "?";
}

FrDump read_fr_dump(const std::string& file, int rank) { return parse_fr_dump(read_bytes(file), file, rank); }

FrDump parse_fr_dump(const std::string& bytes, const std::string& file, int rank) {
  const char first = first_byte(bytes);
  if (first == '{') {
    if (const auto deep = core::json_too_deep(bytes))
      throw core::InputError(file, 0,
                             fmt::format("{}: nested more than {} deep (byte {}): not a Flight Recorder dump",
                                         deep->path, core::kJsonDepthMax, deep->byte));
    Json j;
    try {
      j = Json::parse(bytes);
    } catch (const Json::parse_error& e) {
      throw core::InputError(
          file, 0,
          fmt::format("not JSON: a truncated or corrupt Flight Recorder dump (unreadable at byte {} of {})",
                      std::min<size_t>(e.byte, bytes.size()), bytes.size()));
    } catch (const Json::out_of_range&) {  // a number no 64-bit integer or double holds ("1e999")
      throw core::InputError(file, 0,
                             "not a Flight Recorder dump: it holds a number too large for any field (a corrupt file)");
    }
    return fr_dump_from_json(j, file, rank);
  }
  if (static_cast<unsigned char>(first) == 0x80) return fr_dump_from_json(unpickle(bytes, file), file, rank);
  throw core::InputError(
      file, 0, "neither a JSON nor a pickled Flight Recorder dump (its first byte is neither '{' nor a pickle's 0x80)");
}

void resolve_inferred_groups(std::vector<FrDump>& dumps) {
  std::map<std::string, std::vector<int>> members;  // an inferred group's name -> the ranks naming it
  for (const FrDump& d : dumps)
    for (const auto& [name, g] : d.groups)
      if (g.inferred) members[name].push_back(d.rank);
  for (FrDump& d : dumps)
    for (auto& [name, g] : d.groups)
      if (g.inferred) {
        g.ranks = members.at(name);
        std::sort(g.ranks.begin(), g.ranks.end());
      }
}

FrDumpSet read_fr_dir(const std::string& dir, const std::optional<std::string>& prefix) {
  const fs::path base = dump_folder(dir);
  std::vector<Candidate> all;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(base, ec))
    if (const auto n = dump_name(f.path().filename().string())) all.push_back({*n, f.path().string()});
  if (ec) throw core::InputError(base.string(), 0, "cannot list the folder");
  std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) { return a.path < b.path; });
  std::string chosen;
  std::vector<Candidate> files = of_one_prefix(std::move(all), prefix, base.string(), chosen);
  return read_candidates(std::move(files), chosen, base.string());
}

FrDumpSet read_fr_files(const std::vector<std::string>& paths, const std::optional<std::string>& prefix) {
  if (paths.empty()) throw core::InputError("", 0, "no Flight Recorder dump named");
  std::vector<Candidate> all;
  for (const std::string& p : paths) {
    const auto n = dump_name(fs::path(p).filename().string());
    if (!n)
      throw core::InputError(p, 0,
                             "a Flight Recorder dump's file name must end in its rank (PREFIX + rank, such as rank_0 "
                             "or nccl_trace_rank_0)");
    all.push_back({*n, p});
  }
  std::string chosen;
  std::vector<Candidate> files = of_one_prefix(std::move(all), prefix, paths.front(), chosen);
  if (files.size() != paths.size())
    throw core::InputError(paths.front(), 0,
                           fmt::format("not every dump named is under the prefix '{}'", core::printable(chosen, 40)));
  return read_candidates(std::move(files), chosen, paths.front());
}

bool is_fr_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  const fs::path base = dump_folder(dir);
  for (const auto& f : fs::directory_iterator(base, ec))
    if (dump_name(f.path().filename().string())) return true;
  return false;
}

bool is_fr_file(const std::string& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return false;
  std::ifstream in(file, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  const char first = first_byte(head);
  if (static_cast<unsigned char>(first) == 0x80) return true;
  if (first != '{') return false;
  // A ppspec trace's first line is its header, which names the format whatever its key order; a
  // JSON dump is one object with no such key.
  const std::string line = head.substr(0, head.find('\n'));
  return line.find("\"ppspec_trace\":") == std::string::npos &&
         line.find("\"ppspec_nccl_profiler\":") == std::string::npos;
}

}  // namespace ppspec::traces
