/** `overhead`: the same runtime and agent loop on SQLite vs on an in-memory store. */
import { runAgentLoop } from '../agent-loop.js';
import { median, report, round, sized } from '../lib.js';

const synchronous = process.argv[2] === 'full' ? 'full' : 'normal';
const RUNS = sized(undefined, 3, 1);
const sqlite: number[] = [];
const memory: number[] = [];
await runAgentLoop('memory');
await runAgentLoop('sqlite', synchronous);
for (let run = 0; run < RUNS; run++) {
  const m = await runAgentLoop('memory');
  memory.push((m.checkpoints / m.ms) * 1000);
  const s = await runAgentLoop('sqlite', synchronous);
  sqlite.push((s.checkpoints / s.ms) * 1000);
}
report({
  ratio: round(median(sqlite) / median(memory)),
  sqliteCheckpointsPerSec: Math.round(median(sqlite)),
  memoryCheckpointsPerSec: Math.round(median(memory)),
  synchronous,
});
