// The EAGLE drafter's taps (kernels/eagle.h) on one rank: the outputs of the tapped target layers,
// as the drafter on the last stage reads them. A stage that holds a tapped layer digests it right
// after the layer (inside the forward a decode graph captures; TP ranks sum their lanes' digests by
// an all-reduce); the last stage holds every tap. The transport follows vLLM #50514's final design:
//  * the stage right before the last sends its taps with its activations, in the same group on the
//    same pair, in a fixed order (the aux hidden states ride IntermediateTensors);
//  * a stage two or more hops away sends them straight to the last stage, which receives them in
//    stage order after its activations; that pair carries nothing else, so FIFO order matches them.
// The `untagged_aux_relay` fault sends the adjacent stage's taps the far way too: a second transfer
// on the pair that carries the hand-off, posted before it by the sender and after it by the
// receiver, so the two cross-match.
#pragma once

#include <cstdint>
#include <vector>

#include "core/runtime.h"
#include "engine/rank_context.h"

namespace ppspec::engine {

class EagleTaps {
 public:
  explicit EagleTaps(RankContext& ctx);
  void load_checkpoint();
  void preload();
  // After target layer `layer` (a no-op unless it is tapped): this rank's part of its tap over
  // `rows` rows, summed over the stage's TP ranks (`tp`, null at tp = 1).
  void produce(int layer, int32_t rows, const core::Buffer& row_req, const core::Buffer& context,
               const core::Buffer& lanes, core::Communicator* tp);
  // Inside the activation group of the stage before the last and of the last stage.
  void send_with_activations(core::Communicator& pp, int64_t step, int32_t rows);
  void recv_with_activations(core::Communicator& pp, int64_t step, int32_t rows);
  // After the activations: the far stages send their taps to the last stage, which receives them
  // (called before them too, where the fault sends).
  void exchange_far(core::Communicator& pp, int64_t step, int32_t rows, bool before_activations);
  // The last stage: every tap, in layer order ([max rows, kTapWords] each).
  const std::vector<core::Buffer>& all() const { return buffers_; }
  // What the forwards since the last call digested: per tap filled, its tapped layer and the layer
  // whose output it digested (the eagle_taps probe's pairs); published by publish.
  std::vector<int64_t> take_digested();
  void publish(int64_t step, const std::vector<int64_t>& digested) const;

 private:
  bool rides_activations(int stage) const;
  std::vector<size_t> taps_of(int stage) const;  // indices into layers_
  // The layer whose output fills tap t on its stage: its own layer; under tap_local_layer_index
  // (vLLM #36151) the stage's k-th layer whose index within the stage is a tapped layer's, -1 none.
  std::vector<int> sources(int stage) const;

  RankContext& ctx_;
  std::vector<int> layers_;            // the tapped layers, sorted
  std::vector<int> stage_of_;          // the stage of each
  std::vector<core::Buffer> buffers_;  // per tap; allocated where produced or read
  std::vector<core::Buffer> weights_;  // per tap produced here: [D]
  std::vector<int> source_;            // per tap: the layer digested into it here, -1 none
  std::vector<int64_t> digested_;      // since take_digested: tapped layer, digested layer
};

}  // namespace ppspec::engine
