// The shapes real PyTorch jobs leave in their Flight Recorder dumps, each a family of generated
// programs for the Flight Recorder differential (`ppspec fidelity --backend flight-recorder --shape`):
// a pipeline-and-tensor-parallel job (pp × tp ranks, a group per stage and per column, the world),
// steps of a tensor-parallel all_reduce, activations from each stage to the next and the last
// stage's feedback broadcast, with the family's own calls:
//
// * async: the seeded generator's programs (seeded.h): several streams and host threads, kernels,
//   syncs; their dumps are read as async calls (each group on its own stream);
// * sync: every call on the rank's one stream, as PyTorch's synchronous calls run;
// * coalesced: an all_gather of uneven sizes (a broadcast from each member in turn), or all_reduces
//   and all_gathers coalesced in one group;
// * batched: activations as batched p2p, a middle stage receiving and sending in one batch;
// * all_to_all: an expert-parallel dispatch, one send and one receive of its own size with every
//   member in one group (an all_to_all of uneven splits);
// * wrapped, gloo, snapshot: the sync shape over more steps (written with small rings), as Gloo
//   writes it, or dumped while it runs.
//
// One disturbance per program, cycling through none and the hardware's (disturb.h); in a group of
// several operations a changed count or dtype changes one of them. A pure function of the seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "scenario/generator/disturb.h"
#include "scenario/generator/seeded.h"

namespace ppspec::generator {

enum class FrShape : uint8_t { async, sync, coalesced, batched, all_to_all, wrapped, gloo, snapshot };
inline constexpr FrShape kFrShapes[] = {FrShape::async,      FrShape::sync,    FrShape::coalesced, FrShape::batched,
                                        FrShape::all_to_all, FrShape::wrapped, FrShape::gloo,      FrShape::snapshot};
std::string_view to_string(FrShape s);
std::optional<FrShape> parse_fr_shape(std::string_view s);

// Case `index`'s disturbance in a family other than async: none, then the hardware's, in turn.
std::optional<Disturbance> fr_shape_disturbance(uint64_t index);

// A program of the family (not async: the seeded generator's own), named `name`, its [expect] pass.
GeneratedProgram generate_fr_shape(FrShape shape, uint64_t seed, const std::string& name, std::optional<Disturbance> d,
                                   int max_ranks);

}  // namespace ppspec::generator
