// The seeded front-end's state (seeded.h): its draws, in the order they have always been made, so
// that a seed's program never changes. Internal to scenario/generator/.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/rng.h"
#include "scenario/generator/draft.h"
#include "scenario/generator/seeded.h"

namespace ppspec::generator::seeded {

class Generator {
 public:
  Generator(uint64_t seed, const std::string& name, const GeneratorOptions& opts);
  GeneratedProgram run();

 private:
  uint64_t below(uint64_t n) { return rng_.below(n); }
  bool percent(int p) { return static_cast<int>(below(100)) < p; }
  // seeded_generator.cc: the program around the rounds, and its disturbance.
  void declare();
  void declare_comms();
  void configure();
  void disturb();
  void invert();
  void mutate(std::optional<Disturbance> kind);  // none: one of five at random
  bool communicates() const;
  void finish();
  // seeded_rounds.cc: one round's draws.
  void add_round(int index);
  Collective collective(const program::CommDecl& c);
  Transfer transfer(const program::CommDecl& c);
  Exchange exchange(const program::CommDecl& c);
  Ring ring(const program::CommDecl& c);
  SelfExchange self_exchange(const program::CommDecl& c);
  GraphCapture graph(const program::CommDecl& c);
  RoundBody local(core::RankId r);
  RoundBody second_thread(core::RankId r);
  Payload pick_payload();
  int64_t pick_count();
  core::Dtype pick_dtype(int64_t count);
  std::vector<std::string> streams(size_t n);
  void push(RoundBody body, const std::string& label, Thread t = Thread::main);
  void note_payload(const Payload& pl);
  std::string stream() { return out_.program.streams[below(main_streams_)]; }
  const program::CommDecl& pick_comm() { return out_.program.comms[below(out_.program.comms.size())]; }
  void feature(std::string f) { features_.insert(std::move(f)); }

  core::Rng rng_;
  GeneratorOptions opts_;
  GeneratedProgram out_;
  Draft draft_{0};
  size_t main_streams_ = 1;
  std::vector<int> events_;  // [rank]: events named so far
  int graphs_ = 0;
  int draft_rounds_ = 0;  // rounds drawn before the disturbance
  std::set<std::string> features_;
};

}  // namespace ppspec::generator::seeded
