/**
 * `postgres`: the agent loop through the runtime on the Postgres store vs raw single-row INSERTs
 * (autocommit: one round trip and one commit each) of the same snapshot bytes, on the same server.
 */
import pg from 'pg';
import { clientConfig } from '../../src/store/postgres/connection.js';
import { openBenchPostgresStore, POSTGRES_URL, rawPostgresInserts, runAgentLoop } from '../agent-loop.js';
import { median, report, round, sized } from '../lib.js';

/** Take-and-give pairs of the store-wide slots timed, one after another (what one gated call adds). */
const SLOT_PAIRS = sized(undefined, 1000, 20);

/**
 * What the store-wide limits cost a call on this database: an LLM slot (and a tool slot) taken and
 * given back, one pair after another, in µs, beside a bare `select 1` round trip in the same run.
 */
async function slotCosts(): Promise<{ llmSlotUs: number; toolSlotUs: number; selectUs: number }> {
  const { store, dispose } = await openBenchPostgresStore();
  const client = new pg.Client(clientConfig(POSTGRES_URL, undefined));
  await client.connect();
  const perPair = async (pair: () => Promise<unknown>) => {
    for (let i = 0; i < 20; i++) await pair(); // warm-up: the pool's connections, the plans
    const started = performance.now();
    for (let i = 0; i < SLOT_PAIRS; i++) await pair();
    return ((performance.now() - started) * 1000) / SLOT_PAIRS;
  };
  try {
    const llm = store.llmSlots!;
    const tools = store.toolSlots!;
    const llmSlotUs = await perPair(async () => llm.give((await llm.tryTake(16, 60_000))!));
    const toolSlotUs = await perPair(async () => tools.give('http bench', (await tools.tryTake('http bench', 4, 60_000))!));
    const selectUs = await perPair(() => client.query('select 1'));
    return { llmSlotUs, toolSlotUs, selectUs };
  } finally {
    await client.end();
    await store.close();
    await dispose();
  }
}

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
const slots = await slotCosts();
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
  // The store-wide LLM limit: a slot taken and given back per call (two statements), and the same
  // for a tool with a concurrency; a bare round trip beside them.
  llmSlotUsPerCall: round(slots.llmSlotUs, 0),
  toolSlotUsPerCall: round(slots.toolSlotUs, 0),
  selectRoundTripUs: round(slots.selectUs, 0),
});
