/**
 * `tools`: the tool-calling loop (each task: an answer calling two HTTP tools in parallel against a
 * local tool server, then a text answer) vs the plain agent loop, same agents, tasks and store
 * (SQLite, synchronous=NORMAL), in interleaved pairs. `argv[2]`: where the tool server runs,
 * `child` (default) or `in-process`; `argv[3]` = `code`: also the same loop with the two tools
 * registered in code (no HTTP), to tell the loop's cost from its HTTP calls' (`code*` figures).
 */
import { z } from 'zod';
import { tool } from '../../src/agents/reference/tools.js';
import { AGENTS, BENCH_TOOLS, runAgentLoop, TASKS, TOOL_CALLS_PER_TASK, type LoopResult } from '../agent-loop.js';
import { median, report, round, sized } from '../lib.js';
import { startBenchToolServer, type ToolServerPlace } from '../tool-server.js';

const place: ToolServerPlace = process.argv[2] === 'in-process' ? 'in-process' : 'child';
const withCodeTools = process.argv[3] === 'code';
const RUNS = sized(undefined, 5, 1);
const server = await startBenchToolServer(place);
// The same names and an answer of the tool server's shape, from code.
let codeCalls = 0;
const code = BENCH_TOOLS.map((name) =>
  tool({ name, parameters: z.object({ text: z.string() }), execute: () => (codeCalls++, { ok: true, tool: `/tools/${name}`, bytes: 230, value: 42 }) }),
);
const sides = {
  plain: () => runAgentLoop('sqlite', 'normal'),
  tools: () => runAgentLoop('sqlite', 'normal', { server }),
  ...(withCodeTools ? { code: () => runAgentLoop('sqlite', 'normal', { code }) } : {}),
};
const measured: Record<string, LoopResult[]> = Object.fromEntries(Object.keys(sides).map((side) => [side, []]));
try {
  for (const run of Object.values(sides)) await run(); // warm-up of every loop: JIT, page cache, sockets
  for (let run = 0; run < RUNS; run++) {
    // Interleaved, and the order reversed every other run, so no side always follows another.
    const order = Object.entries(sides);
    for (const [side, loop] of run % 2 ? order.reverse() : order) measured[side]!.push(await loop());
  }
  // Every tool loop made its two calls per task, or its figures are not what they claim.
  const expected = (RUNS + 1) * AGENTS * TASKS * TOOL_CALLS_PER_TASK;
  const calls = await server.calls();
  if (calls !== expected) throw new Error(`The tool server answered ${calls} calls, expected ${expected}.`);
  if (withCodeTools && codeCalls !== expected) throw new Error(`The code tools ran ${codeCalls} times, expected ${expected}.`);
} finally {
  await server.close();
}

const { plain, tools, code: coded } = measured as { plain: LoopResult[]; tools: LoopResult[]; code?: LoopResult[] };
const perSec = (loops: LoopResult[], count: (l: LoopResult) => number) => median(loops.map((l) => (count(l) / l.ms) * 1000));
const cpuPer = (loops: LoopResult[], count: (l: LoopResult) => number) => median(loops.map((l) => l.cpuUs / count(l)));
const checkpoints = (l: LoopResult) => l.checkpoints;
const tasks = (l: LoopResult) => l.tasks;
// The median of the pairs' ratios: each pair ran under the same neighbours.
const pairRatio = (side: LoopResult[], count: (l: LoopResult) => number) => round(median(plain.map((p, i) => (count(side[i]!) / side[i]!.ms) / (count(p) / p.ms))));
report({
  ratio: pairRatio(tools, checkpoints),
  checkpointsPerSec: Math.round(perSec(tools, checkpoints)),
  tasksPerSec: Math.round(perSec(tools, tasks)),
  plainCheckpointsPerSec: Math.round(perSec(plain, checkpoints)),
  plainTasksPerSec: Math.round(perSec(plain, tasks)),
  tasksRatio: pairRatio(tools, tasks),
  checkpointsPerTask: round(tools[0]!.checkpoints / tools[0]!.tasks),
  plainCheckpointsPerTask: round(plain[0]!.checkpoints / plain[0]!.tasks),
  // This process's CPU (the tool server's too when in-process): steadier than wall time here.
  cpuUsPerCheckpoint: round(cpuPer(tools, checkpoints)),
  plainCpuUsPerCheckpoint: round(cpuPer(plain, checkpoints)),
  cpuUsPerTask: round(cpuPer(tools, tasks)),
  plainCpuUsPerTask: round(cpuPer(plain, tasks)),
  bytesPerCheckpoint: Math.round(median(tools.map((l) => l.bytesWritten / l.checkpoints))),
  plainBytesPerCheckpoint: Math.round(median(plain.map((l) => l.bytesWritten / l.checkpoints))),
  ...(coded
    ? {
        codeRatio: pairRatio(coded, checkpoints),
        codeCheckpointsPerSec: Math.round(perSec(coded, checkpoints)),
        codeTasksPerSec: Math.round(perSec(coded, tasks)),
        codeCpuUsPerCheckpoint: round(cpuPer(coded, checkpoints)),
        codeCpuUsPerTask: round(cpuPer(coded, tasks)),
      }
    : {}),
  toolServer: place,
});
