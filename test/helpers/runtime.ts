import { afterEach, vi } from 'vitest';
import { silentLogger, type Logger } from '../../src/core/logger.js';
import { lastUserText, textAnswer, type LlmAnswer, type LlmClient, type LlmRequest } from '../../src/llm/client.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import type { AgentDefaults } from '../../src/agents/reference/types.js';
import { openSqliteStore, SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../src/runtime/runtime.js';
import type { AgentView } from '../../src/runtime/views.js';
import { captureLogs } from './logs.js';
import { tempDbFile } from './temp.js';

/** What `startRuntime` takes; every other option of `createRuntime` is handed over as it is. */
export interface RuntimeFixtureOptions<S extends Store = SqliteStore> extends Partial<Omit<RuntimeOptions, 'store' | 'machines' | 'logger'>> {
  /** A store of the test's own (a Postgres schema, a crashable wrapper). Default: a SQLite file. */
  store?: S;
  /** The SQLite file to open, e.g. a previous runtime's to restart on it. Default: a fresh temp file. */
  file?: string;
  /** The machines to run. Default: the reference agent, with `llm` and `defaults`. */
  machines?: MachineDefinition[];
  /** The reference agent's LLM (default: the simulated one). */
  llm?: LlmClient;
  defaults?: Partial<AgentDefaults>;
  /** `captured`: every line the runtime logs, at debug, parsed into `logs`. Default: silent. */
  logs?: 'silent' | 'captured';
}

export interface TestRuntime<S extends Store = SqliteStore> {
  runtime: Runtime;
  store: S;
  /** The SQLite file it runs on (start another runtime with `{ file }` to restart on it); undefined on a store of another kind. */
  file: S extends SqliteStore ? string : string | undefined;
  /** The logger the runtime writes to (silent unless captured): hand it to what runs beside it, e.g. the HTTP app. */
  logger: Logger;
  /** Every log line, parsed; reading it throws unless the runtime was started with `logs: 'captured'`. */
  readonly logs: Record<string, unknown>[];
}

/**
 * The one way a test gets a runtime: on a real SQLite file (or the store it gives), running the
 * reference agent (or the machines it gives), logging nowhere (or into `logs`). Close it with
 * `runtime.close()`, or start it through `runtimesClosedAfterEach`.
 */
export async function startRuntime<S extends Store = SqliteStore>(options: RuntimeFixtureOptions<S> = {}): Promise<TestRuntime<S>> {
  const { store: given, file: givenFile, machines, llm, defaults, logs, ...runtimeOptions } = options;
  if (given && givenFile !== undefined) throw new Error('startRuntime: give a store or a file, not both');
  if (machines && (llm || defaults)) throw new Error('startRuntime: llm and defaults configure the reference agent; with machines they would be ignored');
  const store: Store = given ?? (await openSqliteStore(givenFile ?? tempDbFile()));
  // A wrapper that is a Proxy of a SqliteStore (crashableStore) passes for one: it runs on that file.
  const file = store instanceof SqliteStore ? store.location : undefined;
  const captured = logs === 'captured' ? captureLogs() : undefined;
  const logger = captured?.logger ?? silentLogger;
  const runtime = await createRuntime({
    ...runtimeOptions,
    store,
    machines: machines ?? [agentDefinition({ llm: llm ?? createSimulatedLlm(), defaults: defaults ?? {} })],
    logger,
  });
  return {
    runtime,
    logger,
    store: store as S,
    file: file as TestRuntime<S>['file'],
    get logs() {
      if (!captured) throw new Error("this runtime's logs were not captured: start it with { logs: 'captured' }");
      return captured.logs;
    },
  };
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

/**
 * An LLM client that records every call and answers through `answer` (default: a fixed text per
 * task); a string answer is a text answer with no usage.
 */
export function recordingLlm(
  answer: (request: LlmRequest, signal: AbortSignal) => Promise<string | LlmAnswer> | string | LlmAnswer = (r) => `answer to ${lastUserText(r)}`,
) {
  const calls: LlmRequest[] = [];
  const llm: LlmClient = {
    kind: 'simulated',
    description: 'recording test LLM',
    complete: async (request, signal) => {
      calls.push(request);
      const answered = await answer(request, signal);
      return typeof answered === 'string' ? textAnswer(answered) : answered;
    },
  };
  return { llm, calls, callsFor: (task: string) => calls.filter((c) => lastUserText(c) === task).length };
}

/** A promise that only settles when the signal aborts: an LLM call in flight at a crash. */
export function hangUntilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
}

/**
 * Call inside a describe (or at the top of a file): returns `startRuntime`, whose runtimes are all
 * closed after each test. Hooks registered before this call run after it (vitest runs after-hooks
 * as a stack), so servers a runtime talks to can be closed there.
 */
export function runtimesClosedAfterEach(): typeof startRuntime {
  const open: Runtime[] = [];
  afterEach(async () => {
    for (const runtime of open.splice(0)) await runtime.close();
  });
  return async <S extends Store = SqliteStore>(options: RuntimeFixtureOptions<S> = {}) => {
    const t = await startRuntime(options);
    open.push(t.runtime);
    return t;
  };
}
