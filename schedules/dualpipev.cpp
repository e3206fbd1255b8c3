// DualPipeV (DeepSeek-V3 technical report, arXiv:2412.19437, §3.2.1, and
// its "cut-in-half" V variant, deepseek-ai/DualPipe): two chunks per rank in
// the V placement (rank r holds stages r and 2p-1-r); in the steady state a
// rank runs the forward of one micro-batch and the backward of another as
// one overlapped op (Op::paired), so that one's communication (the
// expert-parallel all-to-all of MoE layers) hides behind the other's
// compute; the ends of the schedule use split backward (I, W) to fill
// bubbles.
//
// Order (torch.distributed.pipelining ScheduleDualPipeV, v2.14.1,
// _calculate_single_rank_operations), chunk 0 = stage r, chunk 1 = stage
// 2p-1-r; each (stage, kind) takes micro-batches 0, 1, ... in turn (a full
// B counts as that stage's I and W); every I queues its W, and "W" below
// runs the oldest queued one (if any):
//   1. 2(p-r-1) x F0
//   2. r+1 x (F0, F1)
//   3. p-r-1 x (I1, W, F1)
//   4. m-2p+r+1 x ((F0+B1), (F1+B0)); on the last rank the first (F0+B1)
//      runs as F0 then B1, not overlapped
//   5. p-r-1 x (B1, (F1+B0))
//   6. r+1 x (x1, x0) where x is B, and I from the middle pair on (i =
//      (r+1)/2: from its x0 for even r, from its x1 for odd r)
//   7. p-r-1 x (W, x0) with x as left by step 6
//   8. r+1 x W
// Refusals (torch's ValueErrors, quoted): v != 2; m < 2p.
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "schedules/internal.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

using schedule_internal::Cat;
using schedule_internal::Str;

class RankBuilder {
 public:
  RankBuilder(int p, int r) : s0_(r), s1_(2 * p - 1 - r) {}

  int s0() const { return s0_; }
  int s1() const { return s1_; }

  // F, I or B of `stage` (B takes the I counter and advances I and W).
  void Add(OpKind kind, int stage, bool paired = false) {
    const OpKind counter = kind == OpKind::B ? OpKind::I : kind;
    int& next = next_[{stage, counter}];
    order_.push_back(Op{kind, StageId(stage), MicrobatchId(next), paired});
    if (kind == OpKind::I) weights_.emplace_back(stage, next);
    ++next;
    if (kind == OpKind::B) ++next_[{stage, OpKind::W}];
  }

  // The overlapped (F of forward_stage) + (B of backward_stage).
  void AddOverlapped(int forward_stage, int backward_stage) {
    Add(OpKind::F, forward_stage, /*paired=*/true);
    Add(OpKind::B, backward_stage);
  }

  // The W of the oldest I whose W has not run, if any.
  void AddPendingWeight() {
    if (weights_.empty()) return;
    const auto [stage, mb] = weights_.front();
    weights_.pop_front();
    order_.push_back(Op{OpKind::W, StageId(stage), MicrobatchId(mb)});
  }

  std::vector<Op> Take() { return std::move(order_); }

 private:
  int s0_, s1_;
  std::map<std::pair<int, OpKind>, int> next_;
  std::deque<std::pair<int, int>> weights_;  // (stage, mb) of pending W's
  std::vector<Op> order_;
};

std::vector<Op> RankOrder(int p, int m, int r) {
  RankBuilder b(p, r);
  const int s0 = b.s0(), s1 = b.s1();
  for (int k = 0; k < 2 * (p - r - 1); ++k) b.Add(OpKind::F, s0);
  for (int k = 0; k < r + 1; ++k) {
    b.Add(OpKind::F, s0);
    b.Add(OpKind::F, s1);
  }
  for (int k = 0; k < p - r - 1; ++k) {
    b.Add(OpKind::I, s1);
    b.AddPendingWeight();
    b.Add(OpKind::F, s1);
  }
  for (int i = 0; i < m - 2 * p + r + 1; ++i) {
    if (i == 0 && r == p - 1) {
      b.Add(OpKind::F, s0);
      b.Add(OpKind::B, s1);
    } else {
      b.AddOverlapped(s0, s1);
    }
    b.AddOverlapped(s1, s0);
  }
  for (int k = 0; k < p - r - 1; ++k) {
    b.Add(OpKind::B, s1);
    b.AddOverlapped(s1, s0);
  }
  bool split = false;
  const int pairs = r + 1;
  for (int i = 0; i < pairs; ++i) {
    if (i == pairs / 2 && r % 2 == 1) split = true;
    b.Add(split ? OpKind::I : OpKind::B, s1);
    if (i == pairs / 2 && r % 2 == 0) split = true;
    b.Add(split ? OpKind::I : OpKind::B, s0);
  }
  for (int k = 0; k < p - r - 1; ++k) {
    b.AddPendingWeight();
    b.Add(split ? OpKind::I : OpKind::B, s0);
  }
  for (int k = 0; k < r + 1; ++k) b.AddPendingWeight();
  return b.Take();
}

}  // namespace

// Refuses v != 2 or a placement other than V (CheckVShape), m < 2p (torch's
// ValueError, quoted) and a microbatch_group. params.flavor is not used.
Status CheckDualPipeV(const PipelineSpec& spec, const ScheduleParams& params) {
  if (Status s = schedule_internal::CheckVShape(spec, "dualpipev"); !s.ok()) return s;
  const int stages = spec.num_stages();
  if (spec.m < stages) {
    const std::string torch_text =
        Cat({"DualPipeV requires at least as many microbatches as stages, "
             "but got ",
             Str(spec.m), " microbatches and ", Str(stages), " stages."});
    return Error{"pipeline.microbatches",
                 Cat({"must be >= 2 * stages = ", Str(stages),
                      " for dualpipev (PyTorch: \"", torch_text, "\"); got ",
                      Str(spec.m)})};
  }
  if (params.group != 0) {
    return schedule_internal::NoGroup("dualpipev", params.group);
  }
  return {};
}

Result<Program> GenerateDualPipeV(const PipelineSpec& spec,
                                  const ScheduleParams& params) {
  if (Status s = CheckDualPipeV(spec, params); !s.ok()) return s.error();
  std::vector<std::vector<Op>> rank_orders;
  for (int r = 0; r < spec.p; ++r) {
    rank_orders.push_back(RankOrder(spec.p, spec.m, r));
  }
  return schedule_internal::PlaceOnDevices(spec, rank_orders);
}

}  // namespace ppb
