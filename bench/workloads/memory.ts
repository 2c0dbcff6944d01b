/**
 * `memory`: `live`: RSS and heap per live agent with 10,000 idle agents in memory. `passivation-large` /
 * `passivation-small`: with passivation, RSS of a process whose database holds 100,000 agents vs one
 * holding only the working set, after 1,000 agents were woken by events and went back to rest.
 * Runs with --expose-gc so that what is measured is what stays, not garbage not yet collected.
 */
import Database from 'better-sqlite3';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { report, round, sleep, tempFile } from '../lib.js';

const LIVE = Number(process.env.MEMORY_LIVE_AGENTS ?? 10_000);
const ON_DISK = Number(process.env.MEMORY_DISK_AGENTS ?? 100_000);
const WORKING_SET = 1000;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

/** RSS and heap in use once garbage is collected. */
async function settled(): Promise<{ rss: number; heapUsed: number }> {
  for (let i = 0; i < 3; i++) {
    gc!();
    await sleep(50);
  }
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heapUsed };
}

const machines = [agentDefinition({ llm: createSimulatedLlm() })];

async function spawnIdle(runtime: Runtime, count: number, prefix: string) {
  for (let i = 0; i < count; i += 500) {
    await Promise.all(Array.from({ length: Math.min(500, count - i) }, (_, j) => runtime.spawn('agent', { id: `${prefix}-${i + j}` })));
  }
}

const phase = process.argv[2] ?? 'live';

if (phase === 'live') {
  // The same process before and after LIVE resting agents are held in memory.
  const live = await createRuntime({ store: await openSqliteStore(tempFile()), machines });
  await spawnIdle(live, 100, 'warm'); // JIT and caches, outside the measurement
  const before = await settled();
  await spawnIdle(live, LIVE / 2, 'first');
  const half = await settled();
  await spawnIdle(live, LIVE / 2, 'second');
  const after = await settled();
  if (live.liveAgents !== LIVE + 100) throw new Error(`expected ${LIVE + 100} live agents, got ${live.liveAgents}`);
  await live.close();
  report({
    bytesPerLiveAgent: Math.round((after.rss - before.rss) / LIVE),
    // What the second half added: the cost of one more agent, without what grows once (V8's
    // young generation, SQLite's page cache up to its limit, malloc arenas).
    marginalBytesPerLiveAgent: Math.round((after.rss - half.rss) / (LIVE / 2)),
    // What the LIVE agents added to the heap, as for RSS: not the whole heap (modules, caches) divided.
    heapBytesPerLiveAgent: Math.round((after.heapUsed - before.heapUsed) / LIVE),
    liveAgents: LIVE,
  });
} else {
  // Passivation, in a fresh process per database size: the agents' rows are copied from one
  // resting agent straight into the file, then a working set is woken by events and goes back to rest.
  const agents = phase === 'passivation-large' ? ON_DISK : WORKING_SET;
  const file = tempFile();
  const runtime = await createRuntime({ store: await openSqliteStore(file), machines });
  await runtime.spawn('agent', { id: 'template' });
  await runtime.close();
  const db = new Database(file);
  const copyAgent = db.prepare(
    `insert into agents (id, machine, machine_version, status, state, progress, last_seq, inbox_position, event_seq, error, created_at, updated_at, resting)
     select ?, machine, machine_version, status, state, progress, last_seq, inbox_position, event_seq, error, created_at, updated_at, resting from agents where id = 'template'`,
  );
  const copyInput = db.prepare(`insert into agent_inputs (agent_id, input) select ?, input from agent_inputs where agent_id = 'template'`);
  const copyCheckpoint = db.prepare(
    `insert into checkpoints (agent_id, seq, machine_version, event_type, state, status, progress, snapshot, created_at)
     select ?, seq, machine_version, event_type, state, status, progress, snapshot, created_at from checkpoints where agent_id = 'template'`,
  );
  db.transaction(() => {
    for (let i = 0; i < agents; i++) (copyAgent.run(`idle-${i}`), copyInput.run(`idle-${i}`), copyCheckpoint.run(`idle-${i}`));
  })();
  db.close();

  const passivating = await createRuntime({ store: await openSqliteStore(file), machines, passivateAfterMs: 50 });
  const stride = Math.floor(agents / WORKING_SET);
  for (let i = 0; i < WORKING_SET; i++) await passivating.send(`idle-${i * stride}`, { type: 'task.add', task: 'wake up and work' });
  while (passivating.liveAgents > 0) await sleep(50);
  const { rss } = await settled();
  await passivating.close();
  report({ rssMb: round(rss / 2 ** 20, 1), agentsOnDisk: agents, workingSet: WORKING_SET });
}
