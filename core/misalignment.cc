#include "core/finding_kinds.h"
#include "core/misalignment.h"

#include <algorithm>
#include <fmt/format.h>

namespace ppspec::core {

namespace {

constexpr std::string_view kNcclMatchesByPosition =
    "NCCL matches operations by position only (no tags, no size check): from here on data goes to the wrong "
    "operation, or a receiver waits for units that never come (R3, R5)";

constexpr std::string_view kSameMessageOtherSize =
    "the ranks post this message at the same place in their order: they agree on which operation it is, not on its "
    "size (a row dropped or added, a dimension sized differently on one side). NCCL checks no size: a receiver "
    "expecting "
    "more than is sent waits for units that never come; one expecting less keeps stale data and the surplus shifts "
    "into "
    "the next operation (R3, R5)";

// Two posts of one message in two sizes: alike in label (its purpose and step), kind, root and
// capture, apart only in count or dtype. Nothing is out of order, so the report names the size,
// not a shift; R5 still calls it a fifo-misalignment, since NCCL pairs the two by position.
bool same_message_other_size(const OpDesc& a, const OpDesc& b) {
  if (a.label.empty() || !(a.label == b.label) || a.captured != b.captured) return false;
  const bool p2p = is_p2p(a.kind) && is_p2p(b.kind);
  if (!p2p && (a.kind != b.kind || (has_root(a.kind) && a.peer != b.peer))) return false;
  return a.count != b.count || a.dtype != b.dtype;
}

int64_t rows_of(const OpDesc& d) { return d.cols > 0 && d.count % d.cols == 0 ? d.count / d.cols : d.count; }

// " (2 rows vs 1)", " (6 columns per row vs 1)": which dimension of a matrix differs, where only
// one does (a count of a vector says it already).
std::string dimension_apart(const OpDesc& a, const OpDesc& b) {
  if (a.dtype != b.dtype) return "";
  if (a.cols == b.cols && a.cols > 1 && rows_of(a) != rows_of(b))
    return fmt::format(" ({} row{} vs {})", rows_of(a), rows_of(a) == 1 ? "" : "s", rows_of(b));
  if (a.cols != b.cols && rows_of(a) == rows_of(b))
    return fmt::format(" ({} column{} per row vs {})", a.cols, a.cols == 1 ? "" : "s", b.cols);
  return "";
}

// Which side of the data a party is on: a broadcast's root sends, every other member receives.
enum class Side : uint8_t { sender, receiver, member };

Side side_of(const PostedOp& p) {
  const OpDesc& d = p.desc;
  if (d.kind == OpKind::send || (d.kind == OpKind::broadcast && d.peer == p.rank)) return Side::sender;
  if (d.kind == OpKind::recv || d.kind == OpKind::broadcast) return Side::receiver;
  return Side::member;
}

std::string_view verb_of(Side s) { return s == Side::sender ? "sends" : s == Side::receiver ? "receives" : "posts"; }

Site site_of(const PostedOp& p, std::string_view comm, int64_t cseq) {
  return Site{p.rank, std::string(p.actor), std::string(comm), cseq, describe(p.desc), std::string(p.origin)};
}

std::string at_origin(const PostedOp& p) { return p.origin.empty() ? "" : fmt::format(" at {}", p.origin); }

// The earliest step any of the operations was posted for: where the sequences parted.
void note_step(Finding& f, const PostedOp& p) {
  if (p.desc.label.step >= 0 && (f.engine_step < 0 || p.desc.label.step < f.engine_step))
    f.engine_step = p.desc.label.step;
}

// Posts that agree with each other, by rank.
struct Agreeing {
  std::vector<const PostedOp*> posts;
  const OpDesc* labelled = nullptr;  // the first of them that carries a label
};

// The classes of `posts`, the largest first, ties by lowest rank: the majority leads the report.
std::vector<Agreeing> agreeing_classes(std::span<const PostedOp> posts) {
  std::vector<const PostedOp*> by_rank;
  for (const PostedOp& p : posts) by_rank.push_back(&p);
  std::stable_sort(by_rank.begin(), by_rank.end(),
                   [](const PostedOp* a, const PostedOp* b) { return a->rank < b->rank; });
  std::vector<Agreeing> classes;
  for (const PostedOp* p : by_rank) {
    auto same = std::find_if(classes.begin(), classes.end(),
                             [p](const Agreeing& c) { return !disagrees(c.posts.front()->desc, c.labelled, p->desc); });
    if (same == classes.end()) same = classes.insert(classes.end(), Agreeing{});
    same->posts.push_back(p);
    if (same->labelled == nullptr && !p->desc.label.empty()) same->labelled = &p->desc;
  }
  std::stable_sort(classes.begin(), classes.end(),
                   [](const Agreeing& a, const Agreeing& b) { return a.posts.size() > b.posts.size(); });
  return classes;
}

// What the class claims: its first labelled post, else its first (an unlabelled post claims less).
const OpDesc& claim(const Agreeing& c) { return c.labelled != nullptr ? *c.labelled : c.posts.front()->desc; }

// The two operations that show why two classes disagree. Their claims may agree where an
// unlabelled post joined a labelled class, so their first posts are compared too.
std::pair<const OpDesc*, const OpDesc*> pair_apart(const Agreeing& a, const Agreeing& b) {
  const std::pair<const OpDesc*, const OpDesc*> tries[] = {{&claim(a), &claim(b)},
                                                           {&a.posts.front()->desc, &claim(b)},
                                                           {&claim(a), &b.posts.front()->desc},
                                                           {&a.posts.front()->desc, &b.posts.front()->desc}};
  for (const auto& t : tries)
    if (mismatch_fields(*t.first, *t.second).any()) return t;
  return tries[3];
}

// Why two classes disagree, in words.
std::string why_apart(const Agreeing& a, const Agreeing& b) {
  const auto [x, y] = pair_apart(a, b);
  return mismatch_reason(*x, *y);
}

std::vector<RankId> ranks_of(const Agreeing& c) {
  std::vector<RankId> r;
  for (const PostedOp* p : c.posts) r.push_back(p->rank);
  return r;
}

// "ranks 0,1,3 posted all_reduce f32[1024]; rank 2 (the odd one out) posted all_reduce f32[512]"
std::string who_posted_what(const std::vector<Agreeing>& classes, std::span<const RankId> missing, int64_t cseq) {
  // The odd one out: one rank against all the others, which agree among themselves.
  const bool odd_one = classes.size() == 2 && classes[1].posts.size() == 1 && classes[0].posts.size() >= 2;
  std::string s;
  for (size_t i = 0; i < classes.size() && i < kFindingListMax; ++i) {
    if (i) s += "; ";
    s += fmt::format("{}{} posted {}", rank_list(ranks_of(classes[i])), odd_one && i == 1 ? " (the odd one out)" : "",
                     describe(claim(classes[i])));
  }
  if (classes.size() > kFindingListMax) s += fmt::format("; … {} more values", classes.size() - kFindingListMax);
  if (!missing.empty())
    s += fmt::format("; {} {} not posted collective #{}", rank_list({missing.begin(), missing.end()}),
                     missing.size() == 1 ? "has" : "have", cseq);
  return s;
}

}  // namespace

bool disagrees(const OpDesc& first, const OpDesc* first_labelled, const OpDesc& next) {
  return mismatch_fields(first, next).any() ||
         (first_labelled != nullptr && mismatch_fields(*first_labelled, next).any());
}

std::string rank_list(std::vector<RankId> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (ranks.size() == 1) return fmt::format("rank {}", ranks.front());
  std::string s = "ranks ";
  size_t runs = 0;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (runs == kFindingListMax) return s + fmt::format(",… {} ranks in all", ranks.size());
    if (runs++) s += ",";
    // Two neighbours read better as "0,1" than as a range.
    s += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}{}{}", ranks[i], j == i + 1 ? "," : "-", ranks[j]);
    i = j + 1;
  }
  return s;
}

namespace {

// The finding of a pair that disagrees in `mismatched`: out of line, so that the pairings that agree
// (nearly all) pay for none of it.
[[gnu::noinline]] Finding misaligned(const PostedOp& a, const PostedOp& b, std::string_view comm, int64_t cseq,
                                     bool p2p, OpFields mismatched) {
  const std::string why = mismatch_reason(a.desc, b.desc);
  Finding f;
  f.verdict = Verdict::fifo_misalignment;
  f.kind = p2p ? core::FindingKind::p2p_mismatch : core::FindingKind::collective_mismatch;
  f.mismatched = mismatched;
  const std::string where =
      p2p ? fmt::format("send #{} rank{}->rank{}", cseq, a.rank, b.rank) : fmt::format("collective #{}", cseq);
  const bool one_message = same_message_other_size(a.desc, b.desc);
  // The sender first: "rank1 sends i64[1, 6], rank0 receives i64[2, 6] (1 row vs 2)".
  const PostedOp& first = side_of(b) == Side::sender ? b : a;
  const PostedOp& second = &first == &a ? b : a;
  f.summary = one_message
                  ? fmt::format("{} on '{}': the same message '{}' in two sizes: {}{} — rank{} {} {}, rank{} {} {}",
                                where, comm, a.desc.label.str(), mismatch_reason(first.desc, second.desc),
                                dimension_apart(first.desc, second.desc), first.rank, verb_of(side_of(first)),
                                shape_of(first.desc), second.rank, verb_of(side_of(second)), shape_of(second.desc))
                  : fmt::format("{} on '{}' pairs mismatched operations: {}", where, comm, why);
  for (const PostedOp* r : {&a, &b}) {
    f.sites.push_back(site_of(*r, comm, cseq));
    const Side side = side_of(*r);
    f.details.push_back(fmt::format("rank{} {} {} {} (op {}){}", r->rank, r->actor,
                                    side == Side::member ? std::string("posted") : fmt::format("{}:", verb_of(side)),
                                    describe(r->desc), r->op_id, at_origin(*r)));
    note_step(f, *r);
  }
  f.details.emplace_back(one_message ? kSameMessageOtherSize : kNcclMatchesByPosition);
  return f;
}

}  // namespace

std::optional<Finding> misalignment(const PostedOp& a, const PostedOp& b, std::string_view comm, int64_t cseq,
                                    bool p2p) {
  // Every pairing is judged here: agreement is decided on the fields, before any words are made.
  const OpFields mismatched = mismatch_fields(a.desc, b.desc);
  if (!mismatched.any()) return std::nullopt;
  return misaligned(a, b, comm, cseq, p2p, mismatched);
}

std::optional<Finding> collective_misalignment(std::span<const PostedOp> posts, size_t members,
                                               std::span<const RankId> missing, std::string_view comm, int64_t cseq) {
  if (posts.size() < 2) return std::nullopt;
  if (members < 3) return misalignment(posts[0], posts[1], comm, cseq, false);
  const std::vector<Agreeing> classes = agreeing_classes(posts);
  if (classes.size() < 2) return std::nullopt;
  Finding f;
  f.verdict = Verdict::fifo_misalignment;
  f.kind = core::FindingKind::collective_mismatch;
  const auto [x, y] = pair_apart(classes[0], classes[1]);
  f.mismatched = mismatch_fields(*x, *y);
  const bool one_message = classes.size() == 2 && same_message_other_size(claim(classes[0]), claim(classes[1]));
  const std::string what = one_message ? fmt::format(": the same message '{}' in two sizes: {}{}",
                                                     claim(classes[0]).label.str(), why_apart(classes[0], classes[1]),
                                                     dimension_apart(claim(classes[0]), claim(classes[1])))
                                       : " pairs mismatched operations: " + why_apart(classes[0], classes[1]);
  f.summary = fmt::format("collective #{} on '{}'{} — {}", cseq, comm, what, who_posted_what(classes, missing, cseq));
  // Every post, by class, a few per class: the minorities' are the ones to read, so their sites
  // come first (the odd one out is the first site).
  constexpr size_t kPerClass = 4;
  for (size_t i = 0; i < classes.size() && i < kFindingListMax; ++i) {
    const Agreeing& c = classes[i];
    for (size_t k = 0; k < c.posts.size() && k < kPerClass; ++k) {
      const PostedOp& p = *c.posts[k];
      f.details.push_back(
          fmt::format("rank{} {} posted {} (op {}){}", p.rank, p.actor, describe(p.desc), p.op_id, at_origin(p)));
      note_step(f, p);
    }
    if (c.posts.size() > kPerClass)
      f.details.push_back(fmt::format("… and {} more ranks posted the same", c.posts.size() - kPerClass));
  }
  for (size_t i = classes.size(); i-- > 0;)
    for (const PostedOp* p : classes[i].posts)
      if (f.sites.size() < kFindingListMax && (i > 0 || p == classes[0].posts.front()))
        f.sites.push_back(site_of(*p, comm, cseq));
  for (RankId r : missing)
    if (f.sites.size() < kFindingListMax)
      f.sites.push_back(Site{r, "", std::string(comm), cseq, fmt::format("has not posted collective #{}", cseq), ""});
  f.details.emplace_back(one_message ? kSameMessageOtherSize : kNcclMatchesByPosition);
  return f;
}

}  // namespace ppspec::core
