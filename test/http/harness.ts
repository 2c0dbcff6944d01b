// Test harness for the HTTP layer: the runtime fixture (test/helpers/runtime.ts: a temp SQLite file,
// the reference agent with the simulated LLM, logs captured) with the HTTP app on top, driven
// through `app.request()` (no port).
import type { RetentionPolicy } from '../../src/runtime/pruner.js';
import fs from 'node:fs';
import path from 'node:path';
import { vi } from 'vitest';
import { createMachine } from 'xstate';
import type { LlmClient } from '../../src/llm/client.js';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { AgentView } from '../../src/runtime/views.js';
import { createServer, type ServerOptions } from '../../src/http/app.js';
import { isIdleWithProgress, startRuntime } from '../helpers/runtime.js';

/** A second machine, so that "same id, other machine" (409) can be tested. */
const toggleDefinition = {
  name: 'toggle',
  machine: createMachine({ id: 'toggle', initial: 'off', states: { off: { on: { flip: 'on' } }, on: { on: { flip: 'off' } } } }),
};

export interface TestApp {
  app: ReturnType<typeof createServer>;
  runtime: Runtime;
  store: SqliteStore;
  /** Every JSON log line written during the test. */
  logs: Record<string, unknown>[];
  close(): Promise<void>;
}

export async function testApp(
  options: {
    llm?: LlmClient;
    token?: string;
    bodyLimit?: number;
    shutdown?: AbortSignal;
    retention?: RetentionPolicy;
    /** The machines to serve instead of the reference agent and the toggle. */
    machines?: MachineDefinition[];
  } = {},
): Promise<TestApp> {
  const { runtime, store, file, logger, logs } = await startRuntime({
    machines: options.machines ?? [agentDefinition({ llm: options.llm ?? createSimulatedLlm() }), toggleDefinition],
    logs: 'captured',
    ...(options.retention ? { retention: options.retention } : {}),
  });
  const serverOptions: ServerOptions = { runtime, logger };
  if (options.token !== undefined) serverOptions.token = options.token;
  if (options.bodyLimit !== undefined) serverOptions.bodyLimit = options.bodyLimit;
  if (options.shutdown !== undefined) serverOptions.shutdown = options.shutdown;
  const app = createServer(serverOptions);
  return {
    app,
    runtime,
    store,
    logs,
    close: async () => {
      await runtime.close();
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
    },
  };
}

export const JSON_HEADERS = { 'content-type': 'application/json' };

export function postJson(
  app: TestApp['app'],
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return Promise.resolve(
    app.request(url, { method: 'POST', headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) }),
  );
}

export async function getJson<T = any>(app: TestApp['app'], url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: T }> {
  const res = await app.request(url, { headers });
  return { status: res.status, body: (await res.json()) as T };
}

/** Spawns through the API and fails the test unless it answered 201. */
export async function spawn(app: TestApp['app'], id: string, input: Record<string, unknown> = {}, machine = 'agent'): Promise<AgentView> {
  const res = await postJson(app, '/agents', { machine, id, input });
  if (res.status !== 201) throw new Error(`spawn ${id}: ${res.status} ${await res.text()}`);
  return (await res.json()) as AgentView;
}

/** Polls the agent view until `done` says so (the runtime works in the background). */
export async function waitForView(
  app: TestApp['app'],
  id: string,
  done: (view: AgentView) => boolean,
  timeout = 5_000,
): Promise<AgentView> {
  let last: AgentView | undefined;
  await vi.waitFor(
    async () => {
      last = (await getJson<AgentView>(app, `/agents/${id}`)).body;
      if (!done(last)) throw new Error(`agent ${id} not there yet: ${JSON.stringify(last?.state)} ${last?.status}`);
    },
    { timeout, interval: 10 },
  );
  return last!;
}

/** The shared predicate (test/helpers/runtime.ts), under the name the HTTP tests use. */
export const isIdleWith = isIdleWithProgress;

/** Everything a bad request must leave untouched: agent rows, their inboxes and checkpoints. */
export async function storeContents(store: Store) {
  const agents = (await store.listAgents({ limit: 1000 })).items;
  return {
    agents,
    events: await Promise.all(agents.map((a) => store.eventsAfter(a.id, 0))),
    checkpoints: await Promise.all(agents.map((a) => store.listCheckpoints(a.id))),
  };
}

export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/** Reads Server-Sent Events from a response body as they arrive. */
export function sseReader(res: Response) {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const parse = (block: string): SseEvent | undefined => {
    let event = 'message';
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('id:')) id = line.slice(3).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    return data.length ? { event, data: data.join('\n'), ...(id === undefined ? {} : { id }) } : undefined; // comments (keep-alives) carry no data
  };
  return {
    /** The next event, or undefined when the stream has ended. */
    async next(): Promise<SseEvent | undefined> {
      for (;;) {
        const end = buffer.indexOf('\n\n');
        if (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = parse(block);
          if (event) return event;
          continue;
        }
        const { done, value } = await reader.read();
        if (done) return undefined;
        buffer += decoder.decode(value, { stream: true });
      }
    },
    cancel: () => reader.cancel(),
  };
}

/** `Response.json()` is typed `unknown`; tests read bodies loosely and assert on them. */
export async function readJson(res: Response): Promise<any> {
  return res.json();
}
