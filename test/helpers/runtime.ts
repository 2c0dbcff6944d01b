import { afterEach, vi } from 'vitest';
import type { LlmClient, LlmRequest } from '../../src/llm/client.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import type { AgentDefaults } from '../../src/agents/reference/types.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../src/runtime/runtime.js';
import type { AgentView } from '../../src/runtime/views.js';
import { tempDbFile } from './temp.js';

export interface TestRuntime {
  runtime: Runtime;
  store: SqliteStore;
  file: string;
}

/**
 * A runtime on a real SQLite file (a fresh temp file unless one is given), silent logs; `observer`
 * and `inspect` are handed to `createRuntime` as they are.
 */
export async function startRuntime(
  options: {
    file?: string;
    llm?: LlmClient;
    defaults?: Partial<AgentDefaults>;
    machines?: MachineDefinition[];
    passivateAfterMs?: number;
    observer?: RuntimeOptions['observer'];
    inspect?: RuntimeOptions['inspect'];
  } = {},
): Promise<TestRuntime> {
  const file = options.file ?? tempDbFile();
  const store = await openSqliteStore(file);
  const machines = options.machines ?? [agentDefinition({ llm: options.llm ?? createSimulatedLlm(), defaults: options.defaults ?? {} })];
  const runtime = await createRuntime({
    store,
    machines,
    ...(options.passivateAfterMs === undefined ? {} : { passivateAfterMs: options.passivateAfterMs }),
    ...(options.observer === undefined ? {} : { observer: options.observer }),
    ...(options.inspect === undefined ? {} : { inspect: options.inspect }),
  });
  return { runtime, store, file };
}

/** Polls the agent's view until the predicate holds. */
export async function waitForView(runtime: Runtime, id: string, predicate: (view: AgentView) => boolean, timeout = 5000): Promise<AgentView> {
  return vi.waitFor(
    async () => {
      const view = await runtime.view(id);
      if (!predicate(view)) throw new Error(`agent ${id} is ${JSON.stringify(view.state)} (${view.status}), progress ${view.progress}`);
      return view;
    },
    { timeout, interval: 10 },
  );
}

export const isIdleWithProgress = (n: number) => (view: AgentView) => view.state === 'idle' && view.progress === n;

/** An LLM client that records every call and answers through `answer` (default: a fixed text per task). */
export function recordingLlm(answer: (request: LlmRequest, signal: AbortSignal) => Promise<string> | string = (r) => `answer to ${r.task}`) {
  const calls: LlmRequest[] = [];
  const llm: LlmClient = {
    kind: 'simulated',
    description: 'recording test LLM',
    complete: async (request, signal) => {
      calls.push(request);
      return answer(request, signal);
    },
  };
  return { llm, calls, callsFor: (task: string) => calls.filter((c) => c.task === task).length };
}

/** A promise that only settles when the signal aborts: an LLM call in flight at a crash. */
export function hangUntilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
}

/** Call inside a describe: returns `start`, whose runtimes are all closed after each test. */
export function runtimesClosedAfterEach(): (options?: Parameters<typeof startRuntime>[0]) => Promise<TestRuntime> {
  const open: TestRuntime[] = [];
  afterEach(async () => {
    for (const t of open.splice(0)) await t.runtime.close();
  });
  return async (options = {}) => {
    const t = await startRuntime(options);
    open.push(t);
    return t;
  };
}
