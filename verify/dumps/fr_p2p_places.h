// Where each p2p operation stands on its channel (the k-th send from A to B on a group pairs with
// B's k-th receive from A), when rings wrapped at different points on different ranks.
//
// PyTorch counts a rank's p2p calls on a group with one p2p_seq_id (a coalesced group's members
// share one), whatever their peers. Where a rank's ring still holds its first p2p call on a group
// (p2p_seq_id 1), each channel's operations stand at 0, 1, 2, ... as held. Where it dropped some, the
// p2p_seq_id of its first held call says how many calls came before, not how many of them were on
// each channel: that is read from the pattern its held calls repeat (a pipeline stage receives from
// the one before and sends to the one after, every step), taken to have held from the start, and
// only when the ring holds two repetitions of it or more. Otherwise the rank's channels on that
// group are not aligned, and not compared (said in a note).
#pragma once

#include "verify/dumps/fr_job.h"

namespace ppspec::verify {

// Sets every channel operation's position, each channel's `aligned`, and job.placings.
void place_p2p(FrJob& job);

// The smallest period of `ids` (ids[k] == ids[k + p] for every k), by the prefix function; its length
// when it has none shorter.
size_t smallest_period(const std::vector<uint32_t>& ids);

}  // namespace ppspec::verify
