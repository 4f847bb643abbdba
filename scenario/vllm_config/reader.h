// How to_serving reads vLLM's engine arguments: each by name, once, its value checked against what
// vLLM's own type accepts, and every mapping kept with where the argument was given.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "scenario/vllm_config/to_serving.h"

namespace ppspec::vllm_config {

class Reader {
 public:
  Reader(const EngineArgs& args, Serving& out) : args_(args), out_(out) {}

  const EngineArg* get(const std::string& name);
  std::optional<int64_t> integer(const std::string& name, int64_t lo, int64_t hi);
  std::optional<bool> boolean(const std::string& name);
  // A dict-typed argument (speculative_config, compilation_config): a JSON object, or a string that
  // holds one (vLLM's argument types parse it with json.loads: a YAML config may quote it). A
  // bare number is returned as it is, for compilation_config's level.
  std::optional<nlohmann::json> object(const std::string& name, const std::string& expected);
  // The argument is the name `vllm` starts with ("speculative_config.method = ..." is speculative_config's).
  void map(std::string vllm, std::string scenario);
  void unmapped(std::string what) { out_.no_counterpart.push_back(std::move(what)); }
  bool used(const std::string& name) const { return used_.count(name) > 0; }
  bool given(const std::string& name) const { return args_.values.count(name) > 0; }
  std::string origin_of(const std::string& name) const;

  static std::string shown(const nlohmann::json& v);
  static int64_t checked_integer(const nlohmann::json& v, const std::string& origin, const std::string& name,
                                 int64_t lo, int64_t hi);

 private:
  const EngineArgs& args_;
  Serving& out_;
  std::set<std::string> used_;
};

// The parts of to_serving, in the order it reads the arguments (speculative_args.cc,
// stress_workload.cc).

// The proposer as vLLM settles it: its method (MTP's aliases renamed "mtp", as SpeculativeConfig
// does; "" without speculative decoding) and what async scheduling asks of it.
struct Proposer {
  std::string method;
  std::string origin;  // where speculative_config was given
  bool disable_padded_drafter_batch = false;
};
Proposer read_speculative(Reader& r, scenario::ServingCase& c);
// kv_transfer_config: a disaggregated prefill/decode deployment ([disaggregation]; kv_transfer_args.cc).
void read_kv_transfer(Reader& r, scenario::ServingCase& c);
// vLLM's async scheduling, as VllmConfig settles it: on by default where the proposer allows it;
// asked for where vLLM refuses it, refused with vLLM's words.
void read_async_scheduling(Reader& r, const Proposer& p, scenario::ServingCase& c);
void choose_workload(const WorkloadChoice& w, scenario::ServingCase& c, std::vector<Mapping>& notes);

}  // namespace ppspec::vllm_config
