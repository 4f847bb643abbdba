// Loads a Chrome trace-event file (`ppspec export --perfetto`) with the trace engine of Chrome's
// DevTools, as its performance panel does, and checks what a person would see: every process
// (rank) and thread (host thread, stream or process group) the file names, with its slices, and
// the flow arrows bound to them. Usage: node load.mjs FILE PROCESSES MIN_FLOWS THREAD...
// Prints what it loaded; exits 1 when the engine rejects the file or something is missing.
import {analyzeTrace} from '@paulirish/trace_engine/analyze-trace.mjs';

const [file, processes, minFlows, ...threads] = process.argv.slice(2);
const {parsedTrace} = await analyzeTrace(file);
const data = parsedTrace.data;
const loaded = {};
for (const [, p] of data.Renderer.processes)
  for (const [, t] of p.threads) loaded[t.name] = t.entries?.length ?? 0;
const flows = data.Flows.flows.length;
console.log(JSON.stringify({processes: data.Renderer.processes.size, threads: loaded, flows}));
const problems = [];
if (data.Renderer.processes.size !== Number(processes)) problems.push(`${data.Renderer.processes.size} processes, expected ${processes}`);
if (flows < Number(minFlows)) problems.push(`${flows} flow arrows bound to slices, expected at least ${minFlows}`);
for (const t of threads) if (!(loaded[t] > 0)) problems.push(`no slice on thread '${t}'`);
if (problems.length) {
  console.error(`${file}: ${problems.join('; ')}`);
  process.exit(1);
}
