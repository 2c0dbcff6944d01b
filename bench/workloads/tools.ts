/**
 * `tools`: the tool-calling loop (each task: an answer calling two HTTP tools in parallel against a
 * local tool server, then a text answer) vs the plain agent loop, same agents, tasks and store
 * (SQLite, synchronous=NORMAL), in interleaved pairs. `argv[2]`: where the tool server runs,
 * `child` (default) or `in-process`.
 */
import { AGENTS, runAgentLoop, TASKS, TOOL_CALLS_PER_TASK, type LoopResult } from '../agent-loop.js';
import { median, report, round } from '../lib.js';
import { startBenchToolServer, type ToolServerPlace } from '../tool-server.js';

const place: ToolServerPlace = process.argv[2] === 'in-process' ? 'in-process' : 'child';
const RUNS = 5;
const server = await startBenchToolServer(place);
const plain: LoopResult[] = [];
const tools: LoopResult[] = [];
try {
  await runAgentLoop('sqlite', 'normal'); // warm-up of both loops: JIT, page cache, sockets
  await runAgentLoop('sqlite', 'normal', server);
  for (let run = 0; run < RUNS; run++) {
    // Interleaved, and the order swapped every run, so neither side always follows the other.
    const pair = run % 2 ? [true, false] : [false, true];
    for (const withTools of pair) {
      if (withTools) tools.push(await runAgentLoop('sqlite', 'normal', server));
      else plain.push(await runAgentLoop('sqlite', 'normal'));
    }
  }
  // Every tool loop made its two calls per task, or its figures are not what they claim.
  const expected = (RUNS + 1) * AGENTS * TASKS * TOOL_CALLS_PER_TASK;
  const calls = await server.calls();
  if (calls !== expected) throw new Error(`The tool server answered ${calls} calls, expected ${expected}.`);
} finally {
  await server.close();
}

const perSec = (loops: LoopResult[], count: (l: LoopResult) => number) => median(loops.map((l) => (count(l) / l.ms) * 1000));
const cpuPer = (loops: LoopResult[], count: (l: LoopResult) => number) => median(loops.map((l) => l.cpuUs / count(l)));
const checkpoints = (l: LoopResult) => l.checkpoints;
const tasks = (l: LoopResult) => l.tasks;
// The median of the pairs' ratios: each pair ran under the same neighbours.
const ratios = plain.map((p, i) => (tools[i]!.checkpoints / tools[i]!.ms) / (p.checkpoints / p.ms));
report({
  ratio: round(median(ratios)),
  checkpointsPerSec: Math.round(perSec(tools, checkpoints)),
  tasksPerSec: Math.round(perSec(tools, tasks)),
  plainCheckpointsPerSec: Math.round(perSec(plain, checkpoints)),
  plainTasksPerSec: Math.round(perSec(plain, tasks)),
  tasksRatio: round(median(plain.map((p, i) => (tools[i]!.tasks / tools[i]!.ms) / (p.tasks / p.ms)))),
  checkpointsPerTask: round(tools[0]!.checkpoints / tools[0]!.tasks),
  plainCheckpointsPerTask: round(plain[0]!.checkpoints / plain[0]!.tasks),
  // This process's CPU (the tool server's too when in-process): steadier than wall time here.
  cpuUsPerCheckpoint: round(cpuPer(tools, checkpoints)),
  plainCpuUsPerCheckpoint: round(cpuPer(plain, checkpoints)),
  cpuUsPerTask: round(cpuPer(tools, tasks)),
  plainCpuUsPerTask: round(cpuPer(plain, tasks)),
  bytesPerCheckpoint: Math.round(median(tools.map((l) => l.bytesWritten / l.checkpoints))),
  plainBytesPerCheckpoint: Math.round(median(plain.map((l) => l.bytesWritten / l.checkpoints))),
  toolServer: place,
});
