/**
 * The agent loop of the benchmark issue: 200 agents × 10 tasks through the real runtime, with the
 * simulated LLM answering at once and effects recorded locally, so what is measured is the
 * runtime's own cost: XState, checkpoints, commits.
 */
import Database from 'better-sqlite3';
import { createSimulatedLlm } from '../src/llm/simulated-client.js';
import { MemoryStore } from '../src/persistence/memory/memory-store.js';
import { openSqliteStore } from '../src/persistence/sqlite/sqlite-store.js';
import type { Store } from '../src/persistence/store.js';
import { agentDefinition } from '../src/runtime/agent-definition.js';
import { createRuntime } from '../src/runtime/runtime.js';
import { tempFile, writtenBytes } from './lib.js';

export const AGENTS = 200;
export const TASKS = 10;
const TASK_TEXT = (i: number) => `Task ${i}: summarise the attached quarterly figures for the board, in three bullet points, no jargon.`;

export interface LoopResult {
  checkpoints: number;
  tasks: number;
  ms: number;
  /** Process CPU time (all threads) over the same span: steadier than `ms` when neighbours are noisy. */
  cpuUs: number;
  bytesWritten: number;
  snapshots: string[];
}

export async function runAgentLoop(kind: 'sqlite' | 'memory', synchronous: 'normal' | 'full' = 'normal'): Promise<LoopResult> {
  const file = tempFile();
  const store: Store = kind === 'memory' ? new MemoryStore() : await openSqliteStore(file, { synchronous });
  const runtime = await createRuntime({ store, machines: [agentDefinition({ llm: createSimulatedLlm() })] });
  const tasks = Array.from({ length: TASKS }, (_, i) => TASK_TEXT(i));
  const doneAgents = new Set<string>();
  const allDone = new Promise<void>((resolve) => {
    for (let i = 0; i < AGENTS; i++) {
      runtime.watch(`agent-${i}`, (view) => {
        if (view.progress === TASKS && view.state === 'idle') {
          doneAgents.add(view.id);
          if (doneAgents.size === AGENTS) resolve();
        }
      });
    }
  });
  const bytesBefore = writtenBytes();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  await Promise.all(Array.from({ length: AGENTS }, (_, i) => runtime.spawn('agent', { id: `agent-${i}`, input: { tasks } })));
  await allDone;
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const bytesWritten = writtenBytes() - bytesBefore;
  let checkpoints = 0;
  const snapshots: string[] = [];
  for (let i = 0; i < AGENTS; i++) {
    const list = await store.listCheckpoints(`agent-${i}`);
    checkpoints += list.length;
    if (i < 20) for (const c of list) snapshots.push((await store.getCheckpoint(`agent-${i}`, c.seq))!.snapshot);
  }
  await runtime.close();
  return { checkpoints, tasks: AGENTS * TASKS, ms, cpuUs: cpu.user + cpu.system, bytesWritten, snapshots };
}

/** The storage limit: raw better-sqlite3 INSERTs of the same snapshot bytes, one row per transaction. */
export function rawInserts(
  snapshots: string[],
  rows: number,
  synchronous: 'normal' | 'full',
): { perSec: number; cpuUsPerRow: number; bytesPerRow: number } {
  const db = new Database(tempFile('raw.db'));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
  db.exec('create table checkpoints (agent_id text not null, seq integer not null, snapshot text not null, primary key (agent_id, seq))');
  const insert = db.prepare('insert into checkpoints (agent_id, seq, snapshot) values (?, ?, ?)');
  const bytesBefore = writtenBytes();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  for (let i = 0; i < rows; i++) insert.run(`agent-${i % AGENTS}`, i, snapshots[i % snapshots.length]!);
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const bytes = writtenBytes() - bytesBefore;
  db.close();
  return { perSec: (rows / ms) * 1000, cpuUsPerRow: (cpu.user + cpu.system) / rows, bytesPerRow: bytes / rows };
}
