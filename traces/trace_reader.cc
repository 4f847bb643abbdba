#include "traces/trace_reader.h"

#include <fmt/format.h>
#include <fstream>

#include "core/enum_names.h"
#include "core/error.h"

namespace ppspec::traces {
namespace {

std::optional<core::EventKind> parse_kind(std::string_view s) {
  for (int k = 0; k <= static_cast<int>(core::EventKind::verdict); ++k)
    if (core::to_string(static_cast<core::EventKind>(k)) == s) return static_cast<core::EventKind>(k);
  return std::nullopt;
}

}  // namespace

Trace read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw core::InputError(path, 0, "cannot open the trace");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  return read_trace_lines(lines, path);
}

Trace read_trace_lines(const std::vector<std::string>& lines, const std::string& path) {
  Trace t;
  int n = 0;
  auto view = [&t](const nlohmann::json& j, const char* key) -> std::string_view {
    if (!j.contains(key)) return {};
    t.strings.push_back(j.at(key).get<std::string>());
    return t.strings.back();
  };
  for (const std::string& line : lines) {
    ++n;
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw core::InputError(path, n, fmt::format("not JSON: {}", e.what()));
    }
    if (!j.is_object()) throw core::InputError(path, n, "expected a JSON object per line");
    if (j.contains("ppspec_trace")) {
      if (j.at("ppspec_trace") != 1) throw core::InputError(path, n, "unsupported trace version (expected 1)");
      t.header = j;
      continue;
    }
    if (j.contains("ppspec_trace_end")) {
      t.trailer = j;
      continue;
    }
    if (t.header.is_null()) throw core::InputError(path, n, "the first line must be the trace header {\"ppspec_trace\":1,...}");
    try {
      core::Event e;
      const auto kind = parse_kind(j.at("ev").get<std::string>());
      if (!kind) throw core::InputError(path, n, fmt::format("unknown event kind '{}'", j.at("ev").get<std::string>()));
      e.kind = *kind;
      e.seq = j.value("seq", uint64_t{0});
      e.t = j.value("t", int64_t{0});
      e.rank = j.value("rank", -1);
      e.actor = view(j, "actor");
      e.comm = view(j, "comm");
      e.op_id = j.value("op_id", int64_t{-1});
      e.cseq = j.value("cseq", int64_t{-1});
      if (j.contains("op")) {
        e.has_op = true;
        const auto op = core::parse_op_kind(j.at("op").get<std::string>());
        const auto dt = core::parse_dtype(j.at("dtype").get<std::string>());
        if (!op || !dt) throw core::InputError(path, n, "bad 'op' or 'dtype'");
        e.op.kind = *op;
        e.op.dtype = *dt;
        e.op.count = j.at("count").get<int64_t>();
        e.op.cols = j.value("cols", int64_t{1});
        e.op.peer = j.value("peer", j.value("root", -1));
        e.op.label.name = view(j, "label");
        e.op.label.step = j.value("step", int64_t{-1});
        e.op.captured = j.value("captured", false);
      }
      e.kernel = view(j, "kernel");
      e.spec = view(j, "spec");
      e.text = view(j, "text");
      e.value = j.value("value", int64_t{-1});
      e.req = j.value("req", int64_t{-1});
      e.step = j.value("step", int64_t{-1});
      if (j.contains("ints")) {
        t.int_lists.push_back(j.at("ints").get<std::vector<int64_t>>());
        e.ints = t.int_lists.back();
      }
      t.events.push_back(e);
    } catch (const nlohmann::json::exception& e) {
      throw core::InputError(path, n, fmt::format("malformed event: {}", e.what()));
    }
  }
  if (t.header.is_null()) throw core::InputError(path, 1, "empty trace: no header line");
  return t;
}

}  // namespace ppspec::traces
