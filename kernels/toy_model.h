// The toy model (DESIGN §6.5): exact integer arithmetic (wrapping uint32), so CPU = GPU bit for
// bit and the TP all-reduce sum is order-independent. Every output token depends on the whole
// context through a paged KV cache, so a stale input, a wrong position, a wrong slot or a write
// through a padded row changes the tokens.
//
// Hidden state of a token row: a context lane `c` (replicated on every TP rank) and D deep lanes
// (rank t of TP size T owns lanes [t*D/T, (t+1)*D/T)).
//  * Layer 0 (stage 0) embeds: writes E[token] * R^position into the context KV at the row's slot,
//    and c = the sum of the request's context KV over positions 0..p: a polynomial hash of the
//    context. Deep lanes start from a second embedding.
//  * Every layer l mixes the deep lanes: y_j = x_j*W[j] + rotl(x_{j+1},7)*U[j] (partial sums over
//    own lanes, then a TP all-reduce), writes KV_l[slot][j] = mix(y_j ^ V[j]), and
//    x_j = mix(y_j + sum of KV_l over the request's positions 0..p).
//  * The head hashes the deep lanes (another TP all-reduce) into g; the next token comes from the
//    context lane with probability alpha (a hash of g decides), else from g.
// A drafter that extends the context lane with the right embedding predicts the context-lane
// tokens, so drafts are right at about rate alpha - and at about 1/V with a wrong embedding.
#pragma once

#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"

namespace ppspec::kernels {

struct ToyConsts {
  int32_t vocab = 512;
  int32_t lanes = 8;  // D
  int32_t block_size = 16;
  uint32_t r = 0x9E3779B1U;    // odd: R^p never vanishes
  uint32_t accept_1024 = 717;  // alpha = 0.7
};

// The slot of position `pos` of the request whose block table row is `blocks`; PAD when the block
// is the null block or the position has no block. Views are passed by reference here and below:
// what a view remembers of the accesses it has told (kernels/span.h) stays with the caller's.
PPSPEC_HD inline int64_t slot_of(const Span<const int32_t>& blocks, int32_t max_blocks, int32_t block_size,
                                 int64_t pos) {
  const int64_t b = pos / block_size;
  if (b >= max_blocks) return kPadSlot;
  const int32_t block = blocks[b];
  if (block <= 0) return kPadSlot;  // block 0 is the null block: never written
  return static_cast<int64_t>(block) * block_size + pos % block_size;
}

// Adds `count` consecutive elements into 16 accumulators, element e into acc[e % 16]: for a
// power-of-two stride of at most 16, acc[k] then holds part of lane k % stride's sum. The full
// groups of 16 are a fixed-width loop the compiler turns into vector adds.
PPSPEC_HD inline void add_by_16(const uint32_t* p, int64_t count, uint32_t* acc) {
  int64_t e = 0;
  for (; e + 16 <= count; e += 16)
    for (int32_t k = 0; k < 16; ++k) acc[k] += p[e + k];
  for (; e < count; ++e) acc[e & 15] += p[e];
}

// A request's row of the block table, read through the table's own view: its memo carries from one
// kernel row to the next, so the entries a request's rows share are told once, not once per row.
struct BlockRow {
  PPSPEC_HD BlockRow(const Span<const int32_t>& t, int64_t req, int32_t max_blocks)
      : table(t), first(req * max_blocks) {
    table.check_range(first, max_blocks);
  }
  PPSPEC_HD int32_t operator[](int64_t b) const { return table[first + b]; }
  const Span<const int32_t>& table;
  int64_t first;
};

// A power-of-two count of lanes up to 16 (every shape the toy model has): a row of them fills the
// 16 accumulators of add_by_16 evenly, so a block's rows are summed as one contiguous range.
PPSPEC_HD inline bool fills_accumulators(int32_t lanes) {
  return lanes >= 1 && lanes <= 16 && (lanes & (lanes - 1)) == 0;
}

// Adds, for positions from..last of a request, the KV values of lanes [j0, j0+nj) into sum[0..nj):
// `kv` is [slots, stride]. Walks the block table a block at a time (attention over the paged cache);
// wrapping sums are order-independent, so this equals the position-by-position sum through slot_of.
// A row's chunks of lanes come in order, j0 = 0 first, through the same `kv` and `blocks`.
// With `from` > 0 positions before `from` are not read again: the same execution's previous row
// read them, block table entries and KV rows (ContextCarry); the block holding `from` is read from
// there on, the rows right after those the previous row read (the view's memo extends its run).
PPSPEC_HD inline void sum_context(const BlockRow& blocks, int32_t max_blocks, int32_t block_size, int64_t last,
                                  const Span<const uint32_t>& kv, int32_t stride, int32_t j0, int32_t nj, uint32_t* sum,
                                  int64_t from = 0) {
  if (j0 < 0 || nj < 0 || j0 + nj > stride) out_of_bounds(j0, nj, stride);
  // Every lane of a power-of-two stride up to 16 (the toy model's shapes): a block's rows are one
  // contiguous range, summed 16 elements at a time and folded into the lanes at the end.
  const bool whole_rows = j0 == 0 && nj == stride && fills_accumulators(stride);
  uint32_t acc[16] = {};
  int64_t widest = 0;  // acc[k] for k >= widest is still 0
  const int64_t b0 = from > 0 && block_size > 0 ? from / block_size : 0;
  int64_t q0 = b0 * block_size;
  for (int64_t b = b0; b < max_blocks && q0 <= last; ++b, q0 += block_size) {
    const int32_t block = blocks[b];
    if (block <= 0) continue;  // the null block: PAD, never written
    const int64_t n = last - q0 + 1 < block_size ? last - q0 + 1 : block_size;
    // The hottest loop of the simulator: the block's rows are checked once here, and with
    // j0 + nj <= stride every index below lies inside them. A later chunk of lanes (j0 > 0) reads
    // the very rows the first chunk read, in the same item: they were told then.
    const int64_t skip = from > q0 ? from - q0 : 0;  // positions of this block summed (and read) already
    if (skip >= n) continue;
    const int64_t first = (static_cast<int64_t>(block) * block_size + skip) * stride;
    const int64_t count = (n - skip) * stride;
    const uint32_t* base = j0 > 0 ? kv.reread_range(first, count) : kv.read_range(first, count);
    if (whole_rows) {
      add_by_16(base, count, acc);
      widest = count > widest ? count : widest;
      continue;
    }
    for (int64_t o = 0; o < n - skip; ++o)
      for (int32_t j = 0; j < nj; ++j) sum[j] += base[o * stride + j0 + j];
  }
  if (!whole_rows) return;
  for (int32_t half = 8; half >= stride; half /= 2)  // fold the 16 classes down to the stride's
    if (widest > half)
      for (int32_t k = 0; k < half; ++k) acc[k] += acc[k + half];
  for (int32_t j = 0; j < stride; ++j) sum[j] += acc[j];
}

// The context sum a kernel's previous row left (host only). On the simulator a kernel's rows run
// one after another in one execution, in which nothing else touches memory, and a request's rows
// come in order of position (decode rows, a prefill chunk): the next row of the same request adds
// only its new positions to the previous row's sum, and does not visit again the blocks the
// previous row read whole (their reads in this item would be exact repeats: told, checked, and
// bounds-checked then). The same sums as row by row from scratch, as a GPU thread computes
// them; tests/context_carry_test.cc compares the two.
struct ContextCarry {
  int64_t row = -1;   // the row it holds, -1: none
  int64_t last = -1;  // that row's last position
  int32_t req = -1;
  uint32_t sum[16] = {};
};

// The bytes of two views do not overlap: a row's writes through `out` cannot change what the next
// row reads through `in`.
template <typename A, typename B>
PPSPEC_HD inline bool disjoint(const Span<A>& out, const Span<B>& in) {
  const auto* o = reinterpret_cast<const unsigned char*>(out.data);
  const auto* i = reinterpret_cast<const unsigned char*>(in.data);
  return o + out.size * static_cast<int64_t>(sizeof(A)) <= i || i + in.size * static_cast<int64_t>(sizeof(B)) <= o;
}

// The context sum of row `row` (request `req`, positions 0..last, `nj` = `stride` <= 16 lanes) into
// ctx[0..nj), through `carry` where the previous row was the same request's (`carry_ok`: the kernel
// writes nothing the sum reads).
PPSPEC_HD inline void context_of_row(ContextCarry& carry, bool carry_ok, int64_t row, int32_t req,
                                     const BlockRow& blocks, int32_t max_blocks, int32_t block_size, int64_t last,
                                     const Span<const uint32_t>& kv, int32_t stride, uint32_t* ctx) {
  for (int32_t j = 0; j < stride; ++j) ctx[j] = 0;
#if defined(__CUDA_ARCH__)
  (void)carry;
  (void)carry_ok;
  (void)row;
  (void)req;
  sum_context(blocks, max_blocks, block_size, last, kv, stride, 0, stride, ctx);
#else
  if (!carry_ok || row == 0 || carry.row != row - 1 || carry.req != req || last < carry.last) {
    sum_context(blocks, max_blocks, block_size, last, kv, stride, 0, stride, ctx);
  } else {
    for (int32_t j = 0; j < stride; ++j) ctx[j] = carry.sum[j];
    sum_context(blocks, max_blocks, block_size, last, kv, stride, 0, stride, ctx, carry.last + 1);
  }
  carry.row = row;
  carry.req = req;
  carry.last = last;
  for (int32_t j = 0; j < stride; ++j) carry.sum[j] = ctx[j];
#endif
}

// Per-row inputs every model kernel reads; padded rows have row_req = -1.
struct RowInputs {
  Span<const int32_t> input_ids;    // [rows]
  Span<const int64_t> positions;    // [rows]
  Span<const int64_t> slots;        // [rows]
  Span<const int32_t> row_req;      // [rows] req-state index or -1
  Span<const int32_t> block_table;  // [max_reqs, max_blocks]
  int32_t max_blocks;
  int32_t block_size;
};

// Layer 0, first half: the context lane's KV and the deep lanes' starting values.
struct EmbedKernel {
  RowInputs in;
  Span<const uint32_t> embed_ctx;   // [V]
  Span<const uint32_t> embed_deep;  // [V, D]
  int32_t lanes;                    // D
  int32_t lane_begin;
  int32_t lane_count;  // lanes of this TP rank
  uint32_t r;
  Span<uint32_t> ctx_kv;  // [slots]
  Span<uint32_t> x;       // [rows, lane_count]
  PPSPEC_HD void row(int64_t i) const {
    const int64_t x0 = i * lane_count;  // the row, through `x` itself (Span::check_range)
    x.check_range(x0, lane_count);
    if (in.row_req[i] < 0) {
      for (int32_t j = 0; j < lane_count; ++j) x[x0 + j] = 0;
      return;
    }
    const int32_t tok = in.input_ids[i];
    const int64_t pos = in.positions[i];
    if (in.slots[i] != kPadSlot) ctx_kv[in.slots[i]] = embed_ctx[tok] * pow32(r, static_cast<uint64_t>(pos));
    for (int32_t j = 0; j < lane_count; ++j)
      x[x0 + j] =
          embed_deep[static_cast<int64_t>(tok) * lanes + lane_begin + j] ^ mix32(static_cast<uint32_t>(pos) + 1U);
  }
};

// Layer 0, second half: c = the request's context KV summed over positions 0..p.
struct ContextSumKernel {
  RowInputs in;
  Span<const uint32_t> ctx_kv;
  Span<uint32_t> c;  // [rows]
  PPSPEC_HD void row(int64_t i) const {
    const int32_t req = in.row_req[i];
    if (req < 0) {
      c[i] = 0;
      return;
    }
    const BlockRow blocks(in.block_table, req, in.max_blocks);
    uint32_t sum = 0;
    const bool carry_ok = disjoint(c, ctx_kv) && disjoint(c, in.block_table);
    context_of_row(carry, carry_ok, i, req, blocks, in.max_blocks, in.block_size, in.positions[i], ctx_kv, 1, &sum);
    c[i] = sum;
  }
  mutable ContextCarry carry{};  // host only
};

// Layer l, step 1: this rank's contribution to y for every lane (summed across TP afterwards).
struct LayerPartialKernel {
  Span<const int32_t> row_req;
  Span<const uint32_t> x;  // [rows, lane_count]
  Span<const uint32_t> w;  // [D]
  Span<const uint32_t> u;  // [D]
  int32_t lanes;
  int32_t lane_begin;
  int32_t lane_count;
  Span<uint32_t> y;  // [rows, D]
  PPSPEC_HD void row(int64_t i) const {
    // The row's lanes are told as ranges, in the order a lane-by-lane loop first touches them (y's
    // row, written whole; x's row; w's lanes; u's, which wrap to lane D-1 on the first TP rank),
    // then read and written through pointers: the same bytes, each access not checked again.
    uint32_t* yr = y.write_range(i * lanes, lanes);
    for (int32_t j = 0; j < lanes; ++j) yr[j] = 0;
    if (row_req[i] < 0) return;
    if (lane_count <= 0) return;
    const uint32_t* xr = x.read_range(i * lane_count, lane_count);
    const uint32_t* wr = w.read_range(lane_begin, lane_count);
    // u[(j + D - 1) % D] for the lanes j of this rank: from lane_begin - 1, wrapping once.
    const int32_t u_first = (lane_begin + lanes - 1) % lanes;
    const int32_t before_wrap = lanes - u_first < lane_count ? lanes - u_first : lane_count;
    const uint32_t* ua = u.read_range(u_first, before_wrap);
    const uint32_t* ub = before_wrap < lane_count ? u.read_range(0, lane_count - before_wrap) : ua;
    for (int32_t jl = 0; jl < lane_count; ++jl) {
      const int32_t j = lane_begin + jl;
      const uint32_t xj = xr[jl];
      yr[j] += xj * wr[jl];
      const int32_t prev = (j + lanes - 1) % lanes;  // lane j feeds lane j-1 through the rotation
      yr[prev] += ((xj << 7) | (xj >> 25)) * (jl < before_wrap ? ua[jl] : ub[jl - before_wrap]);
    }
  }
};

// Layer l, step 2: write this rank's lanes of the layer's KV at the row's slot.
struct LayerKvWriteKernel {
  RowInputs in;
  Span<const uint32_t> y;  // [rows, D]
  Span<const uint32_t> v;  // [D]
  int32_t lanes;
  int32_t lane_begin;
  int32_t lane_count;
  Span<uint32_t> kv;  // [slots, lane_count]
  PPSPEC_HD void row(int64_t i) const {
    if (in.row_req[i] < 0 || in.slots[i] == kPadSlot) return;
    if (lane_count <= 0) return;
    // Told as ranges in the order the lane-by-lane loop first touches them (y's lanes, v's, the
    // slot's row of kv), then through pointers: the same bytes, each access not checked again.
    const int64_t slot = in.slots[i];
    kv.check_range(slot * lane_count, lane_count);  // a bad slot faults before anything is read
    const uint32_t* yr = y.read_range(i * lanes + lane_begin, lane_count);
    const uint32_t* vr = v.read_range(lane_begin, lane_count);
    uint32_t* kr = kv.write_range(slot * lane_count, lane_count);
    for (int32_t jl = 0; jl < lane_count; ++jl) kr[jl] = mix32(yr[jl] ^ vr[jl]);
  }
};

// Layer l, step 3: attention over the request's KV (positions 0..p) and the new lanes.
struct LayerOutKernel {
  RowInputs in;
  Span<const uint32_t> y;   // [rows, D]
  Span<const uint32_t> kv;  // [slots, lane_count]
  int32_t lanes;
  int32_t lane_begin;
  int32_t lane_count;
  Span<uint32_t> x;  // [rows, lane_count]
  PPSPEC_HD void row(int64_t i) const {
    const int64_t x0 = i * lane_count;  // the row, through `x` itself (Span::check_range)
    x.check_range(x0, lane_count);
    const int32_t req = in.row_req[i];
    if (req < 0) {
      for (int32_t jl = 0; jl < lane_count; ++jl) x[x0 + jl] = 0;
      return;
    }
    const BlockRow blocks(in.block_table, req, in.max_blocks);
    constexpr int32_t kChunk = 16;  // lanes summed per pass: registers on a GPU, no heap
    if (fills_accumulators(lane_count)) {
      // One pass over the context, its sum carried from the request's previous row.
      uint32_t sum[kChunk];
      for (int32_t j = 0; j < lane_count; ++j) sum[j] = y[i * lanes + lane_begin + j];
      uint32_t ctx[kChunk];
      const bool carry_ok = disjoint(x, kv) && disjoint(x, in.block_table);
      context_of_row(carry, carry_ok, i, req, blocks, in.max_blocks, in.block_size, in.positions[i], kv, lane_count,
                     ctx);
      for (int32_t j = 0; j < lane_count; ++j) x[x0 + j] = mix32(sum[j] + ctx[j]);
      return;
    }
    attend(i, blocks, in.positions[i]);
  }
  // Row i's lanes from `blocks`' KV over positions 0..last, a chunk of lanes at a time (no carry).
  PPSPEC_HD void attend(int64_t i, const BlockRow& blocks, int64_t last) const {
    constexpr int32_t kChunk = 16;
    const int64_t x0 = i * lane_count;
    for (int32_t j0 = 0; j0 < lane_count; j0 += kChunk) {
      const int32_t nj = lane_count - j0 < kChunk ? lane_count - j0 : kChunk;
      uint32_t sum[kChunk];
      for (int32_t j = 0; j < nj; ++j) sum[j] = y[i * lanes + lane_begin + j0 + j];
      sum_context(blocks, in.max_blocks, in.block_size, last, kv, lane_count, j0, nj, sum);
      for (int32_t j = 0; j < nj; ++j) x[x0 + j0 + j] = mix32(sum[j]);
    }
  }
  mutable ContextCarry carry{};  // host only
};

// Head, step 1: this rank's part of the deep-lane hash (summed across TP afterwards).
struct HeadPartialKernel {
  Span<const int32_t> row_req;
  Span<const uint32_t> x;
  Span<const uint32_t> head;  // [D]
  int32_t lane_begin;
  int32_t lane_count;
  Span<uint32_t> h;  // [rows]
  PPSPEC_HD void row(int64_t i) const {
    uint32_t sum = 0;
    if (row_req[i] >= 0)
      for (int32_t jl = 0; jl < lane_count; ++jl) sum += x[i * lane_count + jl] * head[lane_begin + jl];
    h[i] = sum;
  }
};

// The greedy next token of a row from its context lane and its deep-lane hash.
PPSPEC_HD inline int64_t ctx_token(uint32_t c, int32_t vocab) {
  return mix32(c ^ 0x01234567U) % static_cast<uint32_t>(vocab);
}
PPSPEC_HD inline int64_t greedy_token(uint32_t c, uint32_t h, int32_t vocab, uint32_t accept_1024) {
  const uint32_t g = mix32(h);
  if (mix32(g ^ 0xA5A5A5A5U) % 1024U < accept_1024) return ctx_token(c, vocab);
  return mix32(g ^ 0x89ABCDEFU) % static_cast<uint32_t>(vocab);
}

// Head, step 2: greedy token per row (-1 for padded rows).
struct LogitsKernel {
  Span<const int32_t> row_req;
  Span<const uint32_t> c;
  Span<const uint32_t> h;
  int32_t vocab;
  uint32_t accept_1024;
  Span<int64_t> greedy;  // [rows]
  PPSPEC_HD void row(int64_t i) const {
    greedy[i] = row_req[i] < 0 ? -1 : greedy_token(c[i], h[i], vocab, accept_1024);
  }
};

}  // namespace ppspec::kernels
