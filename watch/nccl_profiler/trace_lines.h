// The per-rank trace the plugin writes, one JSON object per line (the format is in
// watch/nccl_profiler/README.md; traces/profiler_job.h reads it): a header, a comm_init line per
// communicator, a line per operation posted and per operation completed, the count of records
// lost when it grows, and a trailer when the process ends. Formatted without allocation
// beyond the returned string, on the flusher's thread only.
#pragma once

#include <cstdint>
#include <string>

#include "watch/nccl_profiler/record.h"

namespace ppspec::nccl_profiler {

struct Comm;

// "rank3.node7.4242.jsonl"; "proc.node7.4242.jsonl" when no variable names the process's rank.
std::string trace_file_name(int global_rank, const char* host, int pid);
// `completions`: whether kernel channels are recorded (PPSPEC_PROFILER_EVENTS=calls turns them off).
std::string header_line(int global_rank, const char* host, int pid, bool harness_clock, bool completions);
std::string comm_init_line(const Comm& c);
std::string record_line(const Comm& c, const Record& r);
std::string lost_line(const Comm& c, uint64_t lost);
std::string trailer_line(bool disabled);

}  // namespace ppspec::nccl_profiler
