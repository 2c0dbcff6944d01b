/**
 * `recovery`: 10,000 agents left active mid-task by a SIGKILL; a new runtime restores them all.
 * Measured: time until every agent is restored and running its interrupted step again (its LLM
 * call re-issued), against a raw scan of the same rows (the same query, each snapshot JSON.parsed),
 * and against plain XState doing the same restore with no runtime around it (scan, parse,
 * `createActor(machine, { snapshot }).start()` until every call is re-issued): XState's own floor.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import Database from 'better-sqlite3';
import { createActor, fromPromise, type AnyActorRef } from 'xstate';
import type { LlmClient } from '../../src/llm/client.js';
import { createAgentMachine } from '../../src/agents/reference/machine.js';
import type { LlmAnswer, LlmRequest } from '../../src/llm/client.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { median, report, round, tempFile } from '../lib.js';

const AGENTS = Number(process.env.RECOVERY_AGENTS ?? 10_000);
const file = tempFile();

await new Promise<void>((resolve, reject) => {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'recovery-prepare.ts'), file, String(AGENTS)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    if (line === 'ready') child.kill('SIGKILL');
  });
  child.once('exit', (_code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`prepare exited without being killed (${signal})`))));
});

async function recoverOnce(): Promise<number> {
  let calls = 0;
  let allRunning!: () => void;
  const running = new Promise<void>((resolve) => (allRunning = resolve));
  const llm: LlmClient = {
    kind: 'simulated',
    description: 'counts re-issued calls',
    complete: () => {
      if (++calls === AGENTS) allRunning();
      return new Promise(() => {});
    },
  };
  const started = performance.now();
  const runtime = await createRuntime({ store: await openSqliteStore(file), machines: [agentDefinition({ llm })] });
  await running;
  const ms = performance.now() - started;
  await runtime.close();
  return ms;
}

function rawScan(): number {
  const started = performance.now();
  const db = new Database(file, { readonly: true });
  const rows = db
    .prepare(ACTIVE_ROWS)
    .all() as { snapshot: string }[];
  let n = 0;
  for (const row of rows) n += JSON.parse(row.snapshot) ? 1 : 0;
  db.close();
  if (n !== AGENTS) throw new Error(`raw scan found ${n} agents`);
  return performance.now() - started;
}

const ACTIVE_ROWS = `select a.*, c.snapshot from agents a left join checkpoints c on c.agent_id = a.id and c.seq = a.last_seq where a.status = 'active'`;

async function plainXstateRestore(): Promise<number> {
  let calls = 0;
  let allRunning!: () => void;
  const running = new Promise<void>((resolve) => (allRunning = resolve));
  const machine = createAgentMachine().provide({
    actors: {
      callLlm: fromPromise<LlmAnswer, LlmRequest>(() => {
        if (++calls === AGENTS) allRunning();
        return new Promise(() => {});
      }),
    },
  });
  const started = performance.now();
  const db = new Database(file, { readonly: true });
  const actors: AnyActorRef[] = [];
  for (const row of db.prepare(ACTIVE_ROWS).all() as { id: string; snapshot: string }[]) {
    const actor = createActor(machine, { id: row.id, snapshot: JSON.parse(row.snapshot) as never, input: undefined as never });
    actor.subscribe({ error: () => {} });
    actors.push(actor.start());
  }
  await running;
  const ms = performance.now() - started;
  for (const actor of actors) actor.stop();
  db.close();
  return ms;
}

await recoverOnce(); // warm-up
await plainXstateRestore();
const recovery: number[] = [];
const raw: number[] = [];
const plain: number[] = [];
// Each measurement starts from a collected heap: the previous one's 10,000 actors are garbage.
const collect = () => (globalThis as { gc?: () => void }).gc?.();
for (let run = 0; run < 3; run++) {
  collect();
  raw.push(rawScan());
  collect();
  plain.push(await plainXstateRestore());
  collect();
  recovery.push(await recoverOnce());
}
report({
  ratio: round(median(recovery) / median(raw)),
  ms: Math.round(median(recovery)),
  rawScanMs: Math.round(median(raw)),
  // What XState alone needs to restore and start the same actors: the runtime's share is the rest.
  plainXstateMs: Math.round(median(plain)),
  vsPlainXstate: round(median(recovery) / median(plain)),
  agents: AGENTS,
});
