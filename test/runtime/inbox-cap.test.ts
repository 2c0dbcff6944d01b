// An agent's inbox has a cap (RuntimeOptions.maxInbox): beyond it a send is refused with
// InboxFullError and stores nothing; what was accepted before is all there.
import { assign, setup } from 'xstate';
import { afterEach, describe, expect, it } from 'vitest';
import { InboxFullError } from '../../src/core/errors.js';
import type { MachineDefinition } from '../../src/durable/definition.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { createServer } from '../../src/http/app.js';
import { startRuntime } from '../helpers/runtime.js';

/** Takes jobs into its context at once and does none of them: its backlog only grows. */
const hoarder = setup({
  types: { context: {} as { jobs: string[] }, events: {} as { type: 'job'; name: string } },
}).createMachine({
  id: 'hoarder',
  context: { jobs: [] },
  on: { job: { actions: assign({ jobs: ({ context, event }) => [...context.jobs, event.name] }) } },
});

const definition: MachineDefinition = {
  name: 'hoarder',
  machine: hoarder,
  backlog: (context) => (context as { jobs: string[] }).jobs.length,
};

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
});

describe('the inbox cap', () => {
  it('refuses the event past maxInbox, stores nothing, and says how many wait', async () => {
    ({ runtime } = await startRuntime({ machines: [definition], maxInbox: 3 }));
    await runtime.spawn('hoarder', { id: 'h1' });
    for (const name of ['a', 'b', 'c']) await runtime.send('h1', { type: 'job', name });
    const refused = await runtime.send('h1', { type: 'job', name: 'd' }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(InboxFullError);
    expect(refused).toMatchObject({ code: 'inbox_full', waiting: 3, maxInbox: 3 });
    await runtime.waitFor('h1', (v) => (v.context as { jobs: string[] }).jobs.length === 3);
    // Nothing of the refused event was stored: the agent's inbox holds the three accepted ones.
    const row = await runtime.agentOrThrow('h1');
    expect(row.eventSeq).toBe(3);
  });

  it('counts only inbox events for a machine that declares no backlog', async () => {
    ({ runtime } = await startRuntime({ machines: [{ name: 'hoarder', machine: hoarder }], maxInbox: 3 }));
    await runtime.spawn('hoarder', { id: 'h2' });
    // Each event is consumed at once: the inbox never holds three.
    for (let i = 0; i < 10; i++) await runtime.send('h2', { type: 'job', name: `j${i}` });
    await runtime.waitFor('h2', (v) => (v.context as { jobs: string[] }).jobs.length === 10, { timeoutMs: 5_000 });
  });
});

describe('the inbox cap over HTTP', () => {
  it('answers 429 inbox_full with Retry-After, and the event is not stored', async () => {
    ({ runtime } = await startRuntime({ machines: [definition], maxInbox: 2 }));
    const app = createServer({ runtime });
    const post = (body: unknown) =>
      app.request('/agents/h3/events', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await runtime.spawn('hoarder', { id: 'h3' });
    expect((await post({ type: 'job', name: 'a' })).status).toBe(202);
    expect((await post({ type: 'job', name: 'b' })).status).toBe(202);
    const full = await post({ type: 'job', name: 'c' });
    expect(full.status).toBe(429);
    expect(full.headers.get('retry-after')).toBe('1');
    expect(await full.json()).toMatchObject({ error: { code: 'inbox_full' } });
    expect((await runtime.agentOrThrow('h3')).eventSeq).toBe(2);
  });
});
