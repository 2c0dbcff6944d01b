/**
 * `tools-mcp`: the tool loop of `tools` (each task: an answer calling two tools in parallel, then a
 * text answer) with one of its two tools an MCP server's: `lookup_figures` over HTTP (the local tool
 * server, in a child process) beside `everything__get-resource-reference` of the MCP reference server
 * (`@modelcontextprotocol/server-everything`, stdio, one process shared by every agent), vs the same
 * loop with both tools HTTP, same agents, tasks and store (SQLite, synchronous=NORMAL), in
 * interleaved pairs. An MCP task also lists the server's tools at its first LLM call (from the
 * connection's cache) and commits them in the agent's context: its checkpoints are larger.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENTS, runAgentLoop, TASKS, type LoopResult } from '../agent-loop.js';
import { median, report, round, sized } from '../lib.js';
import { startBenchToolServer } from '../tool-server.js';
import { createMcpServers } from '../../src/mcp/servers.js';
import type { McpServers } from '../../src/mcp/types.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EVERYTHING = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
/** A tool of server-everything that takes the `{ text }` the simulated model sends (its own parameters all have defaults) and answers ~350 bytes. */
const MCP_TOOL = 'get-resource-reference';
const RUNS = sized(undefined, 5, 1);

const server = await startBenchToolServer('child');
const pool = createMcpServers({ everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] } });
// Every call that reached the MCP server, to check the loop made the calls it claims.
let mcpCalls = 0;
const counted: McpServers = {
  names: pool.names,
  listTools: (servers, signal) => pool.listTools(servers, signal),
  callTool: async (...args) => {
    const outcome = await pool.callTool(...args);
    if (outcome.ok) mcpCalls++;
    return outcome;
  },
  close: () => pool.close(),
};
const sides = {
  http: () => runAgentLoop('sqlite', 'normal', { server }),
  mcp: () => runAgentLoop('sqlite', 'normal', { server, mcp: { servers: counted, server: 'everything', tool: MCP_TOOL } }),
};
const measured: Record<keyof typeof sides, LoopResult[]> = { http: [], mcp: [] };
try {
  for (const run of Object.values(sides)) await run(); // warm-up of both loops: JIT, page cache, sockets, the MCP server's process
  for (let run = 0; run < RUNS; run++) {
    // Interleaved, and the order reversed every other run, so no side always follows the other.
    const order = Object.entries(sides) as [keyof typeof sides, () => Promise<LoopResult>][];
    for (const [side, loop] of run % 2 ? order.reverse() : order) measured[side].push(await loop());
  }
  // Each HTTP task called both HTTP tools, each MCP task one HTTP tool and one MCP tool.
  const loops = RUNS + 1;
  const expectedHttp = loops * AGENTS * TASKS * 2 + loops * AGENTS * TASKS;
  const httpCalls = await server.calls();
  if (httpCalls !== expectedHttp) throw new Error(`The tool server answered ${httpCalls} calls, expected ${expectedHttp}.`);
  if (mcpCalls !== loops * AGENTS * TASKS) throw new Error(`The MCP server answered ${mcpCalls} calls, expected ${loops * AGENTS * TASKS}.`);
} finally {
  await server.close();
  await pool.close();
}

const { http, mcp } = measured;
const perSec = (loops: LoopResult[], count: (l: LoopResult) => number) => median(loops.map((l) => (count(l) / l.ms) * 1000));
const cpuPer = (loops: LoopResult[], count: (l: LoopResult) => number) => median(loops.map((l) => l.cpuUs / count(l)));
const checkpoints = (l: LoopResult) => l.checkpoints;
const tasks = (l: LoopResult) => l.tasks;
// The median of the pairs' ratios: each pair ran under the same neighbours.
const pairRatio = (count: (l: LoopResult) => number) => round(median(http.map((h, i) => (count(mcp[i]!) / mcp[i]!.ms) / (count(h) / h.ms))));
report({
  ratio: pairRatio(tasks),
  tasksPerSec: Math.round(perSec(mcp, tasks)),
  httpTasksPerSec: Math.round(perSec(http, tasks)),
  checkpointsPerSec: Math.round(perSec(mcp, checkpoints)),
  httpCheckpointsPerSec: Math.round(perSec(http, checkpoints)),
  checkpointsRatio: pairRatio(checkpoints),
  checkpointsPerTask: round(mcp[0]!.checkpoints / mcp[0]!.tasks),
  httpCheckpointsPerTask: round(http[0]!.checkpoints / http[0]!.tasks),
  // This process's CPU: the MCP client's work is here, the MCP server's and the tool server's are not.
  cpuUsPerTask: round(cpuPer(mcp, tasks)),
  httpCpuUsPerTask: round(cpuPer(http, tasks)),
  bytesPerCheckpoint: Math.round(median(mcp.map((l) => l.bytesWritten / l.checkpoints))),
  httpBytesPerCheckpoint: Math.round(median(http.map((l) => l.bytesWritten / l.checkpoints))),
  mcpConnections: pool.connections('everything'),
});
