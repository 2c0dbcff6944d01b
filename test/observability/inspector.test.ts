// `serve --inspect`: inspection events of real agents flow through Stately's relay to a WebSocket
// receiver (as the browser page would get them), with secrets redacted; failures are sentences.
import net from 'node:net';
import { createWebSocketReceiver, type StatelyInspectionEvent } from '@statelyai/inspect';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fromPromise, setup, type AnyActorRef, type InspectionEvent } from 'xstate';
import { loadConfig } from '../../src/service/config.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { main } from '../../src/service/main.js';
import { startInspector, redactInspectionEvent } from '../../src/observability/inspector.js';
import { silentLogger } from '../../src/core/logger.js';
import { redactSecrets } from '../../src/observability/redact.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { captureLogs } from '../helpers/logs.js';
import { isIdleWithProgress, runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { freePort, tempDbFile } from '../helpers/temp.js';

/** What the receiver gets, read loosely: Stately's event types are unions over every actor kind. */
interface Received {
  type: string;
  sessionId: string;
  name?: string;
  parentId?: string;
  definition?: string;
  snapshot?: { value?: unknown; context?: unknown };
  event?: { type: string };
}

const SECRETS = ['sk-live-CONTEXT-SECRET', 'pw-EVENT-SECRET', 'tok-OUTPUT-SECRET'];

/** A user's machine carrying secrets in its literal context, an event payload, a promise actor's input and output. */
const vaultDefinition = {
  name: 'vault',
  machine: setup({
    actors: { fetchSecret: fromPromise(async () => ({ token: 'tok-OUTPUT-SECRET', note: 'fine' })) },
  }).createMachine({
    id: 'vault',
    context: { apiKey: 'sk-live-CONTEXT-SECRET', owner: 'ada' },
    initial: 'locked',
    states: {
      locked: { on: { unlock: 'fetching' } },
      fetching: { invoke: { id: 'fetch', src: 'fetchSecret', input: ({ context }) => ({ apiKey: context.apiKey }), onDone: 'open' } },
      open: {},
    },
  }),
};

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
// Registered after the hook above, so it runs before it (vitest runs after-hooks as a stack): the
// runtimes are closed before the inspector they report to.
const startRuntime = runtimesClosedAfterEach();

async function runtimeWith(inspect: (event: InspectionEvent) => void, file = tempDbFile()): Promise<Runtime> {
  const { runtime } = await startRuntime({ file, machines: [agentDefinition({ llm: createSimulatedLlm() }), vaultDefinition], inspect });
  return runtime;
}

describe('Stately inspector', () => {
  it('streams real agents through the relay to a WebSocket receiver, secrets redacted everywhere', async () => {
    const port = await freePort();
    const inspector = await startInspector({ port, log: silentLogger });
    cleanups.push(() => inspector.close());
    expect(inspector.url).toBe(`http://localhost:${port}/`);
    // The page the user opens: Stately's bridge, which embeds their web app.
    const page = await (await fetch(`http://127.0.0.1:${port}/`)).text();
    expect(page).toContain('https://stately.ai/inspect');

    const received: Received[] = [];
    createWebSocketReceiver({ server: `ws://127.0.0.1:${port}` }).subscribe((event) => void received.push(event as Received));

    const runtime = await runtimeWith(inspector.inspect);
    await runtime.spawn('agent', { id: 'a1', input: { tasks: ['t1'] } });
    await waitForView(runtime, 'a1', isIdleWithProgress(1));
    await runtime.spawn('vault', { id: 'v1' });
    await runtime.send('v1', { type: 'unlock', password: 'pw-EVENT-SECRET' });
    await waitForView(runtime, 'v1', (v) => v.state === 'open');

    const snapshotsOf = (sessionId: string | undefined) => received.filter((e) => e.type === '@xstate.snapshot' && e.sessionId === sessionId);
    const actorNamed = (name: string) => received.find((e) => e.type === '@xstate.actor' && e.name === name);
    await vi.waitFor(() => expect(snapshotsOf(actorNamed('v1')?.sessionId).at(-1)?.snapshot?.value).toBe('open'), { timeout: 5_000 });

    // The agent: registered with its definition, then one snapshot per macrostep, to idle.
    const a1 = actorNamed('a1')!;
    expect(JSON.parse(a1.definition!)).toMatchObject({ id: 'agent', initial: 'idle' });
    const values = snapshotsOf(a1.sessionId).map((e) => JSON.stringify(e.snapshot?.value));
    expect(values).toEqual(expect.arrayContaining(['{"callingLLM":"requesting"}', '"persisted"', '{"sideEffect":"requesting"}', '"idle"']));
    expect(snapshotsOf(a1.sessionId).at(-1)!.snapshot?.context).toMatchObject({ progress: 1 });
    // Its invoked promise actors are there too, as children of the agent.
    const llm = received.find((e) => e.type === '@xstate.actor' && e.name === 'llm' && e.parentId === a1.sessionId);
    expect(llm).toBeDefined();

    // The vault's secrets: literal context (also in its definition), event payload, promise actor input and output.
    const text = JSON.stringify(received);
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    const v1 = actorNamed('v1')!;
    expect(JSON.parse(v1.definition!).context).toEqual({ apiKey: '[redacted]', owner: 'ada' });
    expect(snapshotsOf(v1.sessionId).at(-1)!.snapshot?.context).toEqual({ apiKey: '[redacted]', owner: 'ada' });
    const unlock = received.find((e) => e.type === '@xstate.event' && e.event?.type === 'unlock');
    expect(unlock?.event).toEqual({ type: 'unlock', password: '[redacted]' });
    // The promise actor has no context (Stately calls sanitizers with undefined for it): it went through whole.
    const fetchActor = received.find((e) => e.type === '@xstate.actor' && e.name === 'fetch' && e.parentId === v1.sessionId)!;
    expect(fetchActor).toBeDefined();
    expect(text).toContain('"note":"fine"');
  });

  it('redaction survives undefined, cycles and live objects, and keeps state names', () => {
    expect(redactSecrets(undefined)).toBeUndefined();
    expect(redactSecrets(null)).toBeNull();
    const cyclic: Record<string, unknown> = { name: 'x', secret: 's' };
    cyclic.self = cyclic;
    expect(redactSecrets(cyclic)).toEqual({ name: 'x', secret: '[redacted]', self: '[circular]' });
    expect(redactSecrets({ maxTokens: 5, accessToken: 't', Authorization: 'Bearer x' })).toEqual({
      maxTokens: 5,
      accessToken: '[redacted]',
      Authorization: '[redacted]',
    });
    const event = {
      type: '@xstate.snapshot',
      sessionId: 'x:1',
      snapshot: { status: 'done', context: undefined, value: { token: 'password' }, input: { apiKey: 'k' } },
      event: { type: 'xstate.done.actor.t', output: { token: 't' } },
    } as unknown as StatelyInspectionEvent;
    expect(redactInspectionEvent(event)).toEqual({
      type: '@xstate.snapshot',
      sessionId: 'x:1',
      snapshot: { status: 'done', value: { token: 'password' }, input: { apiKey: '[redacted]' } },
      event: { type: 'xstate.done.actor.t', output: { token: '[redacted]' } },
    });
  });

  it('fails with a sentence when the port is taken, and serve goes on without it', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => blocker.close(resolve)));
    const port = (blocker.address() as net.AddressInfo).port;

    await expect(startInspector({ port, log: silentLogger })).rejects.toThrow(
      `Cannot start the Stately inspector: port ${port} is in use. Pick another with --inspect=PORT.`,
    );

    const { logger, logs } = captureLogs();
    const service = await main(loadConfig(['--port', '0', '--db', tempDbFile(), `--inspect=${port}`], {}), logger, {});
    cleanups.push(() => service.close());
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
    expect(logs.find((l) => l.level === 50)?.msg).toBe(
      `Cannot start the Stately inspector: port ${port} is in use. Pick another with --inspect=PORT. Serving without the inspector.`,
    );
  });

  it('serve --inspect prints the page to open and streams the agents', async () => {
    const port = await freePort();
    const { logger, logs } = captureLogs();
    const service = await main(loadConfig(['--port', '0', '--db', tempDbFile(), `--inspect=${port}`], {}), logger, {});
    cleanups.push(() => service.close());
    const line = logs.find((l) => l.inspector);
    expect(line?.inspector).toBe(`http://localhost:${port}/`);
    expect(line?.msg).toContain('needs internet');

    const received: Received[] = [];
    createWebSocketReceiver({ server: `ws://127.0.0.1:${port}` }).subscribe((event) => void received.push(event as Received));
    await service.runtime.spawn('agent', { id: 's1', input: { tasks: ['t1'] } });
    await vi.waitFor(() => expect(received.some((e) => e.type === '@xstate.actor' && e.name === 's1')).toBe(true), { timeout: 5_000 });
  });
});

describe('runtime inspect option', () => {
  it('reaches every agent actor, fresh or restored, and a throwing observer breaks no agent', async () => {
    const file = tempDbFile();
    const seen: string[] = [];
    const first = await runtimeWith((event) => {
      if (event.type === '@xstate.actor') seen.push((event.actorRef as AnyActorRef).id);
      throw new Error('a broken inspector');
    }, file);
    await first.spawn('agent', { id: 'r1', input: { tasks: ['t1'] } });
    await waitForView(first, 'r1', isIdleWithProgress(1));
    expect(seen).toEqual(expect.arrayContaining(['r1', 'llm', 'effect']));
    await first.send('r1', { type: 'task.add', task: 't2' });
    await waitForView(first, 'r1', isIdleWithProgress(2));
    await first.close();

    seen.length = 0;
    const second = await runtimeWith((event) => {
      if (event.type === '@xstate.actor') seen.push((event.actorRef as AnyActorRef).id);
    }, file);
    await second.send('r1', { type: 'task.add', task: 't3' }); // wakes it from the store
    await waitForView(second, 'r1', isIdleWithProgress(3));
    expect(seen).toEqual(expect.arrayContaining(['r1', 'llm']));
  });
});
