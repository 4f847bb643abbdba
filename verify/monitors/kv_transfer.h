// The KV transfer of a disaggregated run (engine/disaggregation.h), judged from what each side did:
// the prefill instance's ledger (which blocks hold which request's tokens), its export, each
// producer rank's sends and each consumer rank's pulls (kv_sent, kv_pulled: which blocks of which
// segment went where, after the copy completed), the decode instance's ledger and its admission
// (kv_ready). It reports, at the event that shows it:
//  * an export of blocks that are not the request's prompt blocks, in order (a lookahead block
//    exported: vLLM #44151);
//  * a pull that writes remote block j into the block of another position or request (the block
//    map shifted), or a layer's KV into another layer (per-stage caches paired whole: vllm-ascend
//    #15900), or a segment no route carries (producer and consumer disagree on the layer band or
//    the lanes);
//  * a request admitted before every consumer rank's pull of every segment completed;
//  * a prefill block freed while a send of it had not completed.
// It sees every event of both instances with their global ranks.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class KvTransferMonitor final : public Monitor {
 public:
  using Monitor::Monitor;
  KindSet kinds() const override;
  void on_event(const core::Event& e) override;

 private:
  // One (producer, consumer, segment) of a request's transfer.
  using Leg = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;  // producer, consumer, part, layer, lanes
  struct Transfer {
    int64_t prompt = 0;
    std::vector<int64_t> exported;
    // Its block table on the prefill instance when it exported (the blocks are freed once sent,
    // possibly before a consumer reports its pull).
    std::vector<int64_t> prefill_table;
    std::set<Leg> sent, pulled;
    bool ready = false;  // the decode instance counted every rank's report (kv_ready)
  };
  void allocated(const core::Event& e);
  void freed(const core::Event& e);
  void exported(const core::Event& e);
  void report_freed_before_export(const core::Event& e, int64_t freed_at);
  void report_freed_while_pulling(const core::Event& e, const Transfer& t);
  void sent(const core::Event& e);
  void pulled(const core::Event& e);
  void ready(const core::Event& e);
  bool on_route(int64_t producer, int64_t consumer, const core::KvSegmentFields& s) const;
  void check_pairs(const core::Event& e, const core::KvPulledProbe& p);
  std::set<Leg> legs_expected() const;
  static core::Site pull_site(const Leg& leg, int64_t req);
  bool prefill_side(const core::Event& e) const;
  void report_at(const core::Event& e, std::string summary, std::vector<std::string> details);

  // By request: its block table on each instance, as the ledgers built it.
  std::map<int64_t, std::vector<int64_t>> prefill_tables_, decode_tables_;
  // By request: the prefill instance's step that last freed its blocks.
  std::map<int64_t, int64_t> prefill_freed_at_;
  std::map<int64_t, Transfer> transfers_;
  std::optional<core::Site> site_;  // the site the next report names, when its event has no rank
};

}  // namespace ppspec::verify
