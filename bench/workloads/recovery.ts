/**
 * `recovery`: 10,000 agents left active mid-task by a SIGKILL; a new runtime restores them all.
 * Measured: time until every agent is restored and running its interrupted step again (its LLM
 * call re-issued), against a scan of the same agents through the store's own read (what a restore
 * cannot avoid: the store's query, its checkpoints put back together from their parts, each
 * snapshot JSON.parsed), and against plain XState doing the same restore with no runtime around
 * it (that scan, then `createActor(machine, { snapshot }).start()` until every call is re-issued):
 * XState's own floor.
 *
 * Both baselines read through `Store.loadActiveAgents`, never the checkpoint rows themselves: a row
 * holds only what changed (src/store/checkpoint-encoding.ts), its large values as references to
 * parts, and XState handed such a snapshot drops the invoked child it cannot read without a word,
 * leaving the actor waiting for a call that is never made.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { createActor, fromPromise, type AnyActorRef } from 'xstate';
import type { LlmClient } from '../../src/llm/client.js';
import { createAgentMachine } from '../../src/agents/reference/machine.js';
import type { LlmAnswer, LlmRequest } from '../../src/llm/client.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { median, report, round, sized, tempFile, within } from '../lib.js';

const AGENTS = sized('RECOVERY_AGENTS', 10_000, 50);
const RUNS = sized(undefined, 3, 1);
/** Far beyond any restore of AGENTS (under a second at 10,000): past it, a restore is stuck, not slow. */
const DEADLINE_MS = 120_000;
const file = tempFile();

// The agents to recover: spawned by a child that is SIGKILLed once every one waits on its LLM call.
const prepare = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'recovery-prepare.ts'), file, String(AGENTS)], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const killed = new Promise<void>((resolve, reject) => {
  readline.createInterface({ input: prepare.stdout }).on('line', (line) => {
    if (line === 'ready') prepare.kill('SIGKILL');
  });
  prepare.once('exit', (_code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`prepare exited without being killed (${signal})`))));
});
// The child stays alive until killed: one that never gets ready would otherwise hang the bench.
await within(killed, DEADLINE_MS, () => `prepare did not get its ${AGENTS} agents waiting`).catch((err: unknown) => {
  prepare.kill('SIGKILL');
  throw err;
});

/**
 * Counts the LLM calls the restored agents (re-)issue; `all` resolves at the AGENTS-th. Waiting for
 * it fails, naming how many came, if they do not all come.
 */
function callCounter(side: string) {
  let calls = 0;
  let allCalled!: () => void;
  const all = new Promise<void>((resolve) => (allCalled = resolve));
  return {
    call: () => {
      if (++calls === AGENTS) allCalled();
    },
    all: () => within(all, DEADLINE_MS, () => `${side}: ${calls} of ${AGENTS} restored agents re-issued their LLM call`),
  };
}

async function recoverOnce(): Promise<number> {
  const counter = callCounter('runtime recovery');
  const llm: LlmClient = {
    kind: 'simulated',
    description: 'counts re-issued calls',
    complete: () => {
      counter.call();
      return new Promise(() => {});
    },
  };
  const started = performance.now();
  // The finish line is every call re-issued: the LLM gate (16 in flight by default) must let them
  // all through, or the rest wait for calls that never answer. It still runs: its cost is counted.
  const runtime = await createRuntime({ store: await openSqliteStore(file), machines: [agentDefinition({ llm })], llmLimits: { concurrency: AGENTS } });
  await counter.all();
  const ms = performance.now() - started;
  await runtime.close();
  return ms;
}

/** The active agents with their last checkpoint's whole snapshot, as the store gives them to a restore. */
async function scanSnapshots(): Promise<{ id: string; snapshot: unknown }[]> {
  const store = await openSqliteStore(file);
  try {
    return (await store.loadActiveAgents()).map(({ agent, checkpoint }) => {
      if (!checkpoint) throw new Error(`${agent.id} has no checkpoint: it was killed before its first`);
      if (checkpoint.unreadable !== undefined) throw new Error(`${agent.id}'s checkpoint cannot be read: ${checkpoint.unreadable}`);
      return { id: agent.id, snapshot: JSON.parse(checkpoint.snapshot) as unknown };
    });
  } finally {
    await store.close();
  }
}

async function rawScan(): Promise<number> {
  const started = performance.now();
  const n = (await scanSnapshots()).length;
  const ms = performance.now() - started;
  if (n !== AGENTS) throw new Error(`the scan found ${n} active agents, not ${AGENTS}`);
  return ms;
}

async function plainXstateRestore(): Promise<number> {
  const counter = callCounter('plain XState');
  const machine = createAgentMachine().provide({
    actors: {
      callLlm: fromPromise<LlmAnswer, LlmRequest>(() => {
        counter.call();
        return new Promise(() => {});
      }),
    },
  });
  const started = performance.now();
  const actors: AnyActorRef[] = [];
  for (const { id, snapshot } of await scanSnapshots()) {
    const actor = createActor(machine, { id, snapshot: snapshot as never, input: undefined as never });
    actor.subscribe({ error: () => {} });
    actors.push(actor.start());
  }
  try {
    await counter.all();
  } catch (err) {
    // XState drops an invoked child it cannot restore without an error: say so rather than just wait.
    const childless = actors.filter((actor) => Object.keys(actor.getSnapshot().children as object).length === 0).length;
    throw new Error(`${(err as Error).message}; ${childless} restored actor(s) have no invoked child`, { cause: err });
  }
  const ms = performance.now() - started;
  for (const actor of actors) actor.stop();
  return ms;
}

await recoverOnce(); // warm-up
await plainXstateRestore();
const recovery: number[] = [];
const raw: number[] = [];
const plain: number[] = [];
// Each measurement starts from a collected heap: the previous one's 10,000 actors are garbage.
const collect = () => (globalThis as { gc?: () => void }).gc?.();
for (let run = 0; run < RUNS; run++) {
  collect();
  raw.push(await rawScan());
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
