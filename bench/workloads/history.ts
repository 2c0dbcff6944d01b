/**
 * `history`: one agent with `memory: "conversation"` takes 200 tasks in turn (each: a code tool
 * call with a ~1 KB JSON result, then a ~1 KB text answer), so its context grows by ~2 KB a task.
 * Measured: bytes written per checkpoint at tasks 10, 100 and 200 (flat if a checkpoint stores
 * only what changed, growing if it stores the whole conversation), the store's size over the
 * conversation's, and how long a fresh runtime takes to restore the agent at task 200.
 */
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { historyLlm, historyTool, taskText, transcriptBytesOf, type HistoryCounts } from '../history-model.js';
import { median, report, round, sized, tempFile, within, writtenBytes } from '../lib.js';

const TASKS = sized(undefined, 200, 20);
/** Early, midway, last: tasks 10, 100 and 200 (the figures' names say which). */
const MEASURED = [TASKS / 20, TASKS / 2, TASKS];
const RESTORES = sized(undefined, 5, 1);
/** Far beyond what one task takes (milliseconds): past it, the agent is stuck, not slow. */
const TASK_DEADLINE_MS = 60_000;
const ID = 'history';

const file = tempFile();
const counts: HistoryCounts = { llmCalls: 0, toolCalls: 0 };
const machines = [agentDefinition({ llm: historyLlm(counts), tools: [historyTool(counts)] })];

const store = await openSqliteStore(file, { synchronous: 'normal' });
const runtime = await createRuntime({ store, machines });
await runtime.spawn('agent', { id: ID, input: { tasks: [], memory: 'conversation' } });

const bytesPerCheckpoint = new Map<number, number>();
const checkpointsBefore = await checkpointCount(store);
for (let k = 1; k <= TASKS; k++) {
  const measured = MEASURED.includes(k);
  // From an empty WAL: the task's own writes, not SQLite's copy of earlier ones into the db file (an
  // auto-checkpoint lands in whichever task crosses its threshold) nor WAL pages rewritten while
  // still dirty in the page cache (not counted again by /proc/self/io).
  if (measured) truncateWal(file);
  const before = measured ? await checkpointCount(store) : 0;
  const done = taskDone(runtime, k);
  const bytesBefore = writtenBytes();
  await runtime.send(ID, { type: 'task.add', task: taskText(k) });
  await within(done, TASK_DEADLINE_MS, () => `task ${k} of the history agent did not end`);
  if (measured) bytesPerCheckpoint.set(k, (writtenBytes() - bytesBefore) / ((await checkpointCount(store)) - before));
}
const checkpoints = (await checkpointCount(store)) - checkpointsBefore;
const newest = (await store.listCheckpoints(ID, { newest: 1 }))[0]!;
const snapshot = (await store.getCheckpoint(ID, newest.seq))!.snapshot;
await runtime.close();
if (counts.llmCalls !== 2 * TASKS || counts.toolCalls !== TASKS) {
  throw new Error(`Expected ${2 * TASKS} LLM calls and ${TASKS} tool calls, got ${counts.llmCalls} and ${counts.toolCalls}.`);
}
// The stored conversation is the one the transcript figure counts: four messages a task.
const conversation = (JSON.parse(snapshot) as { context: { conversation: unknown[] } }).context.conversation;
if (conversation.length !== 4 * TASKS) throw new Error(`The stored conversation has ${conversation.length} messages, expected ${4 * TASKS}.`);

truncateWal(file);
const storeBytes = fs.statSync(file).size + (fs.existsSync(`${file}-wal`) ? fs.statSync(`${file}-wal`).size : 0);
const transcriptBytes = transcriptBytesOf(TASKS);

// Recovery is the runtime's public way to bring an agent back without sending it anything (an
// event would be written, and a view of an agent not in memory reads its row, not the agent).
const restoreMs: number[] = [];
for (let run = 0; run <= RESTORES; run++) {
  const fresh = await createRuntime({ store: await openSqliteStore(file, { synchronous: 'normal' }), machines, recover: false });
  const started = performance.now();
  const { restored } = await fresh.recover();
  const ms = performance.now() - started;
  const view = await fresh.view(ID);
  if (restored !== 1 || fresh.liveAgents !== 1 || view.progress !== TASKS || view.state !== 'idle') {
    throw new Error(`The fresh runtime did not restore the agent at task ${TASKS}: ${JSON.stringify({ restored, live: fresh.liveAgents, progress: view.progress, state: view.state })}`);
  }
  await fresh.close();
  if (run > 0) restoreMs.push(ms); // the first warms the JIT and the page cache
}
const check = await openSqliteStore(file, { synchronous: 'normal' });
if ((await checkpointCount(check)) !== checkpointsBefore + checkpoints) throw new Error('Restoring the agent wrote checkpoints.');
await check.close();

report({
  ...Object.fromEntries(MEASURED.map((k) => [`bytesAt${k}`, Math.round(bytesPerCheckpoint.get(k)!)])),
  checkpointsPerTask: round(checkpoints / TASKS),
  transcriptBytes,
  storeBytes,
  storedOverTranscript: round(storeBytes / transcriptBytes),
  restoreMs: round(median(restoreMs)),
  [`snapshotBytesAt${TASKS}`]: Buffer.byteLength(snapshot),
});

function taskDone(rt: Runtime, k: number): Promise<void> {
  return new Promise((resolve) => {
    const unwatch = rt.watch(ID, (view) => {
      if (view.progress !== k || view.state !== 'idle') return;
      unwatch();
      resolve();
    });
  });
}

async function checkpointCount(s: Store): Promise<number> {
  return (await s.listCheckpoints(ID)).length;
}

/** Copies the WAL into the db file and empties it, through a connection of its own. */
function truncateWal(path: string): void {
  const db = new Database(path);
  try {
    db.pragma('busy_timeout = 5000');
    const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
    if (result?.busy) throw new Error('The WAL could not be truncated: a reader held it.');
  } finally {
    db.close();
  }
}
