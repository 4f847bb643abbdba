#include "tools/check_command.h"

#include <fmt/format.h>
#include <ostream>

#include "core/error.h"
#include "tools/report.h"
#include "traces/trace_reader.h"
#include "verify/trace_check.h"

namespace ppspec::tools {

int check_command(const CheckArgs& args, std::ostream& out, std::ostream& err) {
  std::vector<traces::Trace> traces;
  for (const std::string& path : args.traces) {
    try {
      traces.push_back(traces::read_trace(path));
    } catch (const core::InputError& e) {
      err << "ppspec: " << e.what() << '\n';
      return 2;
    }
  }
  nlohmann::json all = nlohmann::json::array();
  int dirty = 0;
  for (size_t i = 0; i < traces.size(); ++i) {
    const traces::Trace& t = traces[i];
    RunRecord rec;
    rec.file = args.traces[i];
    rec.scenario = t.header.value("scenario", std::string("?"));
    rec.seed = t.header.value("seed", uint64_t{0});
    rec.strategy = t.header.value("strategy", std::string());
    rec.has_expectation = false;
    rec.result = verify::check_trace(t);
    rec.ok = rec.result.verdict == core::Verdict::pass;
    if (!rec.ok) ++dirty;
    if (args.json)
      all.push_back(to_json(rec));
    else
      out << format_text(rec);
  }
  if (args.json) out << all.dump(2) << '\n';
  return dirty == 0 ? 0 : 1;
}

}  // namespace ppspec::tools
