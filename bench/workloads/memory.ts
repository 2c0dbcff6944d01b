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
import { report, round, sized, sleep, tempFile, within } from '../lib.js';

const LIVE = sized('MEMORY_LIVE_AGENTS', 10_000, 200);
const ON_DISK = sized('MEMORY_DISK_AGENTS', 100_000, 1_000);
const WORKING_SET = sized(undefined, 1000, 20);
/** Far beyond the seconds the working set takes to rest again: past it, an agent is stuck awake. */
const REST_DEADLINE_MS = 300_000;
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
  copyAgent(db, 'template', agents);
  db.close();

  const passivating = await createRuntime({ store: await openSqliteStore(file), machines, passivateAfterMs: 50 });
  const stride = Math.floor(agents / WORKING_SET);
  for (let i = 0; i < WORKING_SET; i++) await passivating.send(`idle-${i * stride}`, { type: 'task.add', task: 'wake up and work' });
  await within(
    (async () => {
      while (passivating.liveAgents > 0) await sleep(50);
    })(),
    REST_DEADLINE_MS,
    () => `${passivating.liveAgents} of the ${WORKING_SET} woken agents are still in memory`,
  );
  const { rss } = await settled();
  // Each woken agent must have done its task: one whose copy could not be restored would have left
  // memory too (quarantined), and the figure would be that of a process that did nothing.
  for (let i = 0; i < WORKING_SET; i++) {
    const view = await passivating.view(`idle-${i * stride}`);
    if (view.status !== 'active' || view.progress !== 1) {
      throw new Error(`idle-${i * stride} did not do its task: ${JSON.stringify({ status: view.status, state: view.state, progress: view.progress })}`);
    }
  }
  await passivating.close();
  report({ rssMb: round(rss / 2 ** 20, 1), agentsOnDisk: agents, workingSet: WORKING_SET });
}

/**
 * `count` copies (`idle-0`…) of agent `id` with everything of its own, straight into the file: its
 * row, input, checkpoints and the snapshot parts they refer to. Every column is copied, whatever the
 * schema holds (a checkpoint's `encoded` and `base_seq` say how to read its snapshot: without them a
 * copy is unreadable), but each table's own row key.
 */
function copyAgent(db: Database.Database, id: string, count: number): void {
  const copy = (table: string, idColumn: string, skip: string[] = []) => {
    const columns = (db.pragma(`table_info(${table})`) as { name: string }[]).map((c) => c.name).filter((c) => c !== idColumn && !skip.includes(c));
    const list = columns.join(', ');
    return db.prepare(`insert into ${table} (${idColumn}, ${list}) select ?, ${list} from ${table} where ${idColumn} = ?`);
  };
  // `pos`: the agents' rowid, their creation order.
  const statements = [copy('agents', 'id', ['pos']), copy('agent_inputs', 'agent_id'), copy('checkpoints', 'agent_id'), copy('snapshot_parts', 'agent_id')];
  db.transaction(() => {
    for (let i = 0; i < count; i++) for (const statement of statements) statement.run(`idle-${i}`, id);
  })();
}
