// kv_transfer_config (`--kv-transfer-config`), as vLLM's KVTransferConfig reads it: a disaggregated
// prefill/decode deployment. ppspec models the transfer of the NIXL connector (pull) over an NCCL
// communicator per rank pair (engine/disaggregation.h); the connectors it models, and what it says
// of the others.
#include <fmt/format.h>
#include <map>

#include "core/error.h"
#include "scenario/vllm_config/reader.h"

namespace ppspec::vllm_config {
namespace {

using Json = nlohmann::json;

// The connectors ppspec models, and how.
const std::map<std::string, std::string>& modelled_connectors() {
  static const std::map<std::string, std::string> how = {
      {"NixlConnector", "pull, as NIXL's: the decode side reads the prompt's blocks"},
      {"NixlPushConnector", "pull (the push variant's writes are modelled as the decode side's reads)"},
      {"P2pNcclConnector", "pull over an NCCL communicator per rank pair (the P2P NCCL connector's transport)"},
  };
  return how;
}

std::string string_field(const Json& o, const char* key, const std::string& origin) {
  if (!o.contains(key)) return "";
  if (!o.at(key).is_string())
    throw core::InputError(
        origin, 0, fmt::format("kv_transfer_config.{}: expected a string, got {}", key, Reader::shown(o.at(key))));
  return o.at(key).get<std::string>();
}

}  // namespace

void read_kv_transfer(Reader& r, scenario::ServingCase& c) {
  const std::optional<Json> cfg = r.object("kv_transfer_config", "a JSON object (vLLM's KVTransferConfig)");
  if (!cfg) return;
  const std::string origin = r.origin_of("kv_transfer_config");
  const std::string connector = string_field(*cfg, "kv_connector", origin);
  const std::string role = string_field(*cfg, "kv_role", origin);
  const auto how = modelled_connectors().find(connector);
  if (how == modelled_connectors().end())
    throw core::InputError(origin, 0,
                           fmt::format("kv_transfer_config.kv_connector = \"{}\": not modelled; ppspec models "
                                       "NixlConnector, NixlPushConnector and P2pNcclConnector",
                                       connector));
  if (role != "kv_producer" && role != "kv_consumer" && role != "kv_both")
    throw core::InputError(origin, 0,
                           fmt::format("kv_transfer_config.kv_role = \"{}\": expected one of kv_producer, "
                                       "kv_consumer, kv_both",
                                       role));
  if (c.dp > 1)
    throw core::InputError(origin, 0,
                           fmt::format("kv_transfer_config with data_parallel_size = {}: a disaggregated instance "
                                       "of several data-parallel replicas is not modelled",
                                       c.dp));
  if (!c.recurrent_layers.empty())
    throw core::InputError(origin, 0,
                           "kv_transfer_config with a hybrid model: the transfer of a recurrent layer's state is not "
                           "modelled");
  c.disaggregated = true;
  c.prefill_pp = c.pp;
  c.prefill_tp = c.tp;
  r.map(fmt::format("kv_transfer_config.kv_connector = \"{}\"", connector),
        fmt::format("[disaggregation] ({})", how->second));
  r.map(fmt::format("kv_transfer_config.kv_role = \"{}\"", role),
        fmt::format("[disaggregation] prefill_pp = {}, prefill_tp = {} (both instances of this command line's "
                    "shape; edit prefill_pp and prefill_tp for a prefill instance of another)",
                    c.prefill_pp, c.prefill_tp));
}

}  // namespace ppspec::vllm_config
