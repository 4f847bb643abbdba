#include "watch/watcher.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/printable.h"

namespace ppspec::watch {
namespace {

traces::TraceHeader merged_header() {
  traces::TraceHeader h;
  h.scenario = "nccl-job";
  h.backend = traces::TraceBackend::nccl_profiler;
  h.strategy = "hardware";
  return h;
}

// Which communicator a mismatch is on: once one misaligned it, every later pairing there is shifted
// by the same cause (check's rule: one finding per root cause), so it is reported once.
std::string place_of(const core::Finding& f) { return f.sites.empty() ? f.summary : f.sites.front().comm; }

}  // namespace

Watcher::Watcher(const std::string& merged_trace, bool strict) : strict_(strict) {
  if (!merged_trace.empty()) writer_ = std::make_unique<traces::JsonlWriter>(merged_trace, merged_header());
}

Watcher::~Watcher() = default;

size_t Watcher::add_source(std::string where) { return job_.add_source(std::move(where)); }

void Watcher::add_line(size_t source, std::string_view line) {
  try {
    job_.add_line(source, std::string(line));
  } catch (const core::InputError& e) {
    if (strict_) throw;
    // A bad line from a writer (another version, a torn write, a stranger on the socket) costs
    // that line only.
    ++dropped_;
    if (drop_reasons_.size() < kDropReasonsKept) drop_reasons_.push_back(e.what());
  }
}

void Watcher::Fanout::on_event(const core::Event& e) {
  if (e.kind == core::EventKind::op_posted || e.kind == core::EventKind::op_started ||
      e.kind == core::EventKind::op_completed)
    ++w_.progress_;
  w_.pairing_.on_event(e);
  w_.window_.on_event(e);
  if (w_.writer_) w_.writer_->on_event(e);
}

std::vector<WatchReport> Watcher::take_reports() {
  std::vector<WatchReport> out;
  const auto& closed = pairing_.mismatches();
  for (; closed_reported_ < closed.size(); ++closed_reported_) {
    const core::Finding& f = closed[closed_reported_];
    if (!reported_.insert(place_of(f)).second)
      continue;  // reported while open, or the same cause shifting later pairings
    out.push_back(WatchReport{WatchReport::Kind::misalignment, f});
  }
  // A collective of three or more members whose second post already disagrees: said at once, not
  // when the last member posts (which may be never).
  for (core::Finding& f : pairing_.open_mismatches())
    if (reported_.insert(place_of(f)).second) out.push_back(WatchReport{WatchReport::Kind::misalignment, std::move(f)});
  return out;
}

uint64_t Watcher::progress() const { return progress_; }

bool Watcher::all_ended() const { return job_.counts().sources > 0 && job_.counts().ended == job_.counts().sources; }

void Watcher::finish(const core::RunResult& result) {
  if (writer_) writer_->finish(result);
  writer_.reset();
}

}  // namespace ppspec::watch
