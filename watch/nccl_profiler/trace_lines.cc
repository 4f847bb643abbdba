#include "watch/nccl_profiler/trace_lines.h"

#include <cctype>
#include <cstdio>
#include <cstring>

#include "watch/nccl_profiler/recorder.h"

namespace ppspec::nccl_profiler {
namespace {

// A JSON string literal of `s` (bounded by the callers' fixed buffers).
std::string quoted(const char* s) {
  std::string out = "\"";
  for (const char* p = s; *p != '\0'; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string hash_text(uint64_t hash) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "\"%016llx\"", static_cast<unsigned long long>(hash));
  return buf;
}

std::string number(int64_t v) { return std::to_string(v); }

}  // namespace

std::string trace_file_name(int global_rank, const char* host, int pid) {
  std::string safe;
  for (const char* p = host; *p != '\0' && safe.size() < 64; ++p)
    safe += std::isalnum(static_cast<unsigned char>(*p)) || *p == '-' ? *p : '_';
  const std::string who = global_rank >= 0 ? "rank" + std::to_string(global_rank) : std::string("proc");
  return who + "." + safe + "." + std::to_string(pid) + ".jsonl";
}

std::string header_line(int global_rank, const char* host, int pid, bool harness_clock, bool completions) {
  return "{\"ppspec_nccl_profiler\":" + number(kPluginVersion) + ",\"rank\":" + number(global_rank) +
         ",\"host\":" + quoted(host) + ",\"pid\":" + number(pid) +
         ",\"clock\":" + (harness_clock ? "\"harness\"" : "\"realtime\"") +
         (completions ? "" : ",\"completions\":false") + "}\n";
}

std::string comm_init_line(const Comm& c) {
  return "{\"ev\":\"comm_init\",\"t\":" + number(c.init_ns) + ",\"comm\":" + hash_text(c.hash) +
         ",\"name\":" + quoted(c.name) + ",\"ranks\":" + number(c.ranks) + ",\"comm_rank\":" + number(c.rank) +
         ",\"interface\":" + number(c.interface) + "}\n";
}

namespace {

// What an op_posted or op_captured line says of the call: kind, type, size, root or peer, where.
std::string call_fields(const Record& r) {
  std::string s = ",\"func\":\"" + std::string(trace_name(r.func)) + "\",\"dtype\":\"" + trace_name(r.datatype) +
                  "\",\"count\":" + number(r.count);
  if (r.peer >= 0) s += std::string(is_p2p(r.func) ? ",\"peer\":" : ",\"root\":") + number(r.peer);
  if (r.stream != 0) s += ",\"stream\":" + number(r.stream);
  if (r.group >= 0) s += ",\"group\":" + number(r.group);
  if (r.call_site[0] != '\0') {
    char site[kCallSiteBytes + 1] = {};
    std::memcpy(site, r.call_site, kCallSiteBytes);
    s += ",\"site\":" + quoted(site);
  }
  return s;
}

const char* event_name(RecordKind k) {
  switch (k) {
    case RecordKind::comm_init: return "comm_init";
    case RecordKind::op_posted: return "op_posted";
    case RecordKind::op_peer: return "op_peer";
    case RecordKind::op_captured: return "op_captured";
    case RecordKind::op_started: return "op_started";
    case RecordKind::op_completed: return "op_completed";
    case RecordKind::comm_finalized: return "comm_finalized";
    case RecordKind::group_ended: return "group_ended";
  }
  return "?";
}

}  // namespace

std::string record_line(const Comm& c, const Record& r) {
  if (r.kind == RecordKind::comm_init) return "";  // written from the communicator itself, first
  std::string line = "{\"ev\":\"" + std::string(event_name(r.kind)) + "\",\"t\":" + number(r.time_ns) +
                     ",\"comm\":" + hash_text(c.hash);
  if (r.kind == RecordKind::comm_finalized) return line + "}\n";
  if (r.kind == RecordKind::group_ended) return line + ",\"group\":" + number(r.group) + "}\n";
  line += ",\"op\":" + number(static_cast<int64_t>(r.op));
  switch (r.kind) {
    case RecordKind::op_posted:
      line += call_fields(r);
      if (r.captured) line += ",\"replay_of\":" + number(static_cast<int64_t>(r.replay_of));
      break;
    case RecordKind::op_captured: line += call_fields(r); break;
    case RecordKind::op_peer: line += ",\"peer\":" + number(r.peer); break;
    default: break;
  }
  return line + "}\n";
}

std::string lost_line(const Comm& c, uint64_t lost) {
  return "{\"ev\":\"lost\",\"comm\":" + hash_text(c.hash) + ",\"records\":" + number(static_cast<int64_t>(lost)) +
         "}\n";
}

std::string trailer_line(bool disabled) {
  return std::string("{\"ppspec_nccl_profiler_end\":") + number(kPluginVersion) +
         ",\"disabled\":" + (disabled ? "true" : "false") + "}\n";
}

}  // namespace ppspec::nccl_profiler
