#include "report/serving_figures.h"

namespace ppspec::report {

ServingFigures figures_of(const serving::ServingRun& run, const engine::EngineConfig& cfg) {
  return ServingFigures{run.stats.steps,
                        static_cast<int64_t>(run.requests.size()),
                        run.stats.output_tokens,
                        run.stats.acceptance_rate(),
                        run.stats.tokens_per_step(),
                        run.coverage,
                        run.stats.prefix_evictions,
                        run.paths,
                        serving::unexercised(cfg, run.paths)};
}

}  // namespace ppspec::report
