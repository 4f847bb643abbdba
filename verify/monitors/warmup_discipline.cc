#include "verify/monitors/warmup_discipline.h"

#include <fmt/format.h>

#include "core/hazard_kinds.h"
#include "engine/communicators.h"

namespace ppspec::verify {

void WarmupDiscipline::on_event(const core::Event& e) {
  if (e.kind != core::EventKind::warmup_phase && e.kind != core::EventKind::op_posted &&
      e.kind != core::EventKind::module_load)
    return;
  Phase& p = phase_[e.rank];
  switch (e.kind) {
    case core::EventKind::warmup_phase:
      switch (e.subject.phase) {
        case core::WarmupPhase::feedback_disabled: p = Phase::disabled; break;
        case core::WarmupPhase::feedback_enabled: p = Phase::feedback_warmup; break;
        case core::WarmupPhase::serving: p = Phase::serving; break;
        // Whether the engine said it disabled the feedback does not matter: what it posts does.
        case core::WarmupPhase::preload_registered_kernels:
          if (p == Phase::init || p == Phase::disabled) p = Phase::warmup;
          break;
        default: break;
      }
      return;
    case core::EventKind::op_posted:
      if ((p != Phase::warmup && p != Phase::disabled) || !facts_.has_role(e.comm, engine::CommRole::feedback)) return;
      {
        core::Finding f =
            finding_at(e, core::Verdict::hazard, core::FindingKind::feedback_during_warmup,
                       fmt::format("rank{} posts a feedback collective during warmup, before the feedback "
                                   "warmup step: {}",
                                   e.rank, core::describe(e.op)));
        f.engine_step = e.op.label.step;
        f.sites.push_back(
            core::Site{e.rank, std::string(e.actor), std::string(e.comm), e.cseq, core::describe(e.op), ""});
        f.details.push_back(
            "a synthetic warmup step's feedback collective: its outputs are discarded, and it pairs with "
            "serving's broadcasts or spins forever (DESIGN §6.3: feedback stays disabled until the "
            "feedback warmup step)");
        report(std::move(f));
      }
      return;
    case core::EventKind::module_load:
      if (p != Phase::serving) return;
      {
        core::Finding f =
            finding_at(e, core::Verdict::hazard, core::FindingKind::module_load_after_warmup,
                       fmt::format("rank{} loads kernel module {}[{}] while serving: warmup did not load this "
                                   "specialization",
                                   e.rank, e.kernel, e.spec));
        f.engine_step = e.step;  // the step the host was executing
        f.sites.push_back(core::Site{e.rank, std::string(e.actor), "", -1,
                                     fmt::format("launch {}[{}]", e.kernel, e.spec), std::string(e.text)});
        f.details.push_back(
            "a module load waits for the device to drain (R8): with a feedback receive spinning on the "
            "side stream it waits for the last stage; warm every serving specialization up before "
            "serving (warmup_pp_decode_update for post_update[deferred])");
        report(std::move(f));
      }
      return;
    default: return;
  }
}

}  // namespace ppspec::verify
