/**
 * `postgres`: the agent loop through the runtime on the Postgres store vs raw single-row INSERTs
 * (autocommit: one round trip and one commit each) of the same snapshot bytes, on the same server.
 */
import { rawPostgresInserts, runAgentLoop } from '../agent-loop.js';
import { median, report, round, sized } from '../lib.js';

// Five interleaved pairs, as `throughput`: a noisy neighbour hurts both sides alike.
const RUNS = sized(undefined, 5, 1);
/** Enough rows for a steady rate; each one waits for its own WAL flush. */
const RAW_ROWS = sized(undefined, 2000, 20);
const runtimeRates: number[] = [];
const taskRates: number[] = [];
const rawRates: number[] = [];
const runtimeCpu: number[] = [];
const rawCpu: number[] = [];
const transactionSizes: number[] = [];
const roundTrips: number[] = [];
const otherStatements: number[] = [];
await runAgentLoop('postgres'); // warm-up: JIT, the server's caches
for (let run = 0; run < RUNS; run++) {
  const loop = await runAgentLoop('postgres');
  runtimeRates.push((loop.checkpoints / loop.ms) * 1000);
  taskRates.push((loop.tasks / loop.ms) * 1000);
  runtimeCpu.push(loop.cpuUs / loop.checkpoints);
  transactionSizes.push(loop.checkpoints / loop.transactions);
  roundTrips.push(loop.transactionStatements / loop.transactions);
  otherStatements.push(loop.otherStatements / loop.checkpoints);
  const raw = await rawPostgresInserts(loop.snapshots, RAW_ROWS);
  rawRates.push(raw.perSec);
  rawCpu.push(raw.cpuUsPerRow);
}
report({
  ratio: round(median(runtimeRates) / median(rawRates)),
  checkpointsPerSec: Math.round(median(runtimeRates)),
  tasksPerSec: Math.round(median(taskRates)),
  baselinePerSec: Math.round(median(rawRates)),
  // This process's CPU only: the Postgres server's is not counted (it shares the machine's cores).
  cpuUsPerCheckpoint: round(median(runtimeCpu)),
  baselineCpuUsPerRow: round(median(rawCpu)),
  checkpointsPerTransaction: round(median(transactionSizes), 1),
  // Statements per write transaction, begin and commit included: each is a round trip.
  roundTripsPerTransaction: round(median(roundTrips), 1),
  // Round trips outside the commits (spawns, the effect look-up of each task, lease ticks).
  otherRoundTripsPerCheckpoint: round(median(otherStatements), 2),
});
