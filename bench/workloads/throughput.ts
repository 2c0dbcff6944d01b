/** `throughput` (synchronous=NORMAL) or `durable` (synchronous=FULL): runtime vs raw single-row INSERTs. */
import { rawInserts, runAgentLoop } from '../agent-loop.js';
import { median, report, round, sized } from '../lib.js';

const synchronous = process.argv[2] === 'full' ? 'full' : 'normal';
// Five interleaved pairs: the medians hold up better than three against a neighbour who comes and goes.
const RUNS = sized(undefined, 5, 1);
/** Raw rows at FULL: enough for a steady rate, each one waiting for its own fsync. */
const FULL_RAW_ROWS = sized(undefined, 2000, 20);
const runtimeRates: number[] = [];
const taskRates: number[] = [];
const rawRates: number[] = [];
const runtimeCpu: number[] = [];
const rawCpu: number[] = [];
const bytes: number[] = [];
await runAgentLoop('sqlite', synchronous); // warm-up: JIT, page cache
for (let run = 0; run < RUNS; run++) {
  // Interleaved, so a noisy neighbour hurts both sides alike.
  const loop = await runAgentLoop('sqlite', synchronous);
  runtimeRates.push((loop.checkpoints / loop.ms) * 1000);
  taskRates.push((loop.tasks / loop.ms) * 1000);
  bytes.push(loop.bytesWritten / loop.checkpoints);
  runtimeCpu.push(loop.cpuUs / loop.checkpoints);
  const raw = rawInserts(loop.snapshots, synchronous === 'full' ? FULL_RAW_ROWS : loop.checkpoints, synchronous);
  rawRates.push(raw.perSec);
  rawCpu.push(raw.cpuUsPerRow);
}
report({
  ratio: round(median(runtimeRates) / median(rawRates)),
  checkpointsPerSec: Math.round(median(runtimeRates)),
  tasksPerSec: Math.round(median(taskRates)),
  baselinePerSec: Math.round(median(rawRates)),
  bytesPerCheckpoint: Math.round(median(bytes)),
  // CPU time per checkpoint vs per raw row: what the ratio would be on an idle machine if both were
  // CPU-bound (at NORMAL they are; at FULL the raw side mostly waits for the disk, so this says little).
  cpuUsPerCheckpoint: round(median(runtimeCpu)),
  baselineCpuUsPerRow: round(median(rawCpu)),
  cpuRatio: round(median(rawCpu) / median(runtimeCpu)),
  synchronous,
});
