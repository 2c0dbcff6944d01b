// Durable delays in one process: `after`, a delayed `raise` and a delayed `sendTo` keep their
// deadlines across a restart of the runtime on the same SQLite file, fire once, and never into a
// state that cancelled them. (The SIGKILL version: test/e2e/delays-crash.test.ts.)
import { assign, raise, setup } from 'xstate';
import { describe, expect, it, vi } from 'vitest';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { tempDbFile } from '../helpers/temp.js';

interface Fired {
  what: string;
  at: number;
}

/** `waiting` --after 400 ms--> `late`; `leave` cancels it; `reminding` raises `ping` with a 300 ms delay. */
const timerMachine = setup({
  types: { context: {} as { fired: Fired[]; pings: number }, events: {} as { type: 'leave' } | { type: 'remind' } | { type: 'ping' } | { type: 'back' } },
  delays: { patience: 400 },
}).createMachine({
  id: 'timers',
  context: { fired: [], pings: 0 },
  initial: 'waiting',
  states: {
    waiting: {
      after: { patience: { target: 'late', actions: assign({ fired: ({ context }) => [...context.fired, { what: 'late', at: Date.now() }] }) } },
      on: { leave: 'elsewhere', remind: { actions: raise({ type: 'ping' }, { delay: 300, id: 'reminder' }) }, ping: { actions: assign({ pings: ({ context }) => context.pings + 1 }) } },
    },
    elsewhere: { on: { back: 'waiting' } },
    late: { on: { ping: { actions: assign({ pings: ({ context }) => context.pings + 1 }) } } },
  },
});

const timers: MachineDefinition = { name: 'timers', machine: timerMachine };

const contextOf = (view: { context: unknown }) => view.context as { fired: Fired[]; pings: number };

describe('durable delays', () => {
  const start = runtimesClosedAfterEach();

  it('an `after` fires at its deadline, once', async () => {
    const t = await start({ machines: [timers] });
    const spawnedAt = Date.now();
    await t.runtime.spawn('timers', { id: 'd1' });
    const view = await waitForView(t.runtime, 'd1', (v) => v.state === 'late', 5_000);
    const [fired] = contextOf(view).fired;
    expect(fired!.at - spawnedAt).toBeGreaterThanOrEqual(400);
    expect(contextOf(view).fired).toHaveLength(1);
    // The checkpoint that entered `waiting` kept the delay; the one after it fired has none.
    const stored = await t.store.loadRestorable('d1');
    expect(stored?.checkpoint?.timers).toBeUndefined();
  });

  it('keeps its original deadline across a restart: it fires then, not 400 ms after the restart', async () => {
    const file = tempDbFile();
    const first = await start({ machines: [timers], file });
    const spawnedAt = Date.now();
    await first.runtime.spawn('timers', { id: 'd2' });
    await vi.waitFor(async () => expect((await first.store.loadRestorable('d2'))?.checkpoint?.timers).toHaveLength(1));
    const [pending] = (await first.store.loadRestorable('d2'))!.checkpoint!.timers!;
    expect(pending).toMatchObject({ id: 'xstate.after.patience.timers.waiting', event: { type: 'xstate.after.patience.timers.waiting' } });
    expect(pending!.at).toBeGreaterThanOrEqual(spawnedAt + 400);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await first.runtime.close();

    const second = await start({ machines: [timers], file });
    const view = await waitForView(second.runtime, 'd2', (v) => v.state === 'late', 5_000);
    const [fired] = contextOf(view).fired;
    expect(fired!.at).toBeGreaterThanOrEqual(pending!.at);
    expect(fired!.at - pending!.at).toBeLessThan(250); // at the deadline, not a whole delay after the restart
  });

  it('fires at once after a restart when the deadline passed while nothing ran', async () => {
    const file = tempDbFile();
    const first = await start({ machines: [timers], file });
    await first.runtime.spawn('timers', { id: 'd3' });
    await vi.waitFor(async () => expect((await first.store.loadRestorable('d3'))?.checkpoint?.timers).toHaveLength(1));
    await first.runtime.close();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const restartedAt = Date.now();
    const second = await start({ machines: [timers], file });
    const view = await waitForView(second.runtime, 'd3', (v) => v.state === 'late', 5_000);
    expect(contextOf(view).fired[0]!.at - restartedAt).toBeLessThan(200);
  });

  it('a delay cancelled by leaving its state stays cancelled across a restart; re-entering starts a new one', async () => {
    const file = tempDbFile();
    const first = await start({ machines: [timers], file });
    await first.runtime.spawn('timers', { id: 'd4' });
    await first.runtime.send('d4', { type: 'leave' });
    await waitForView(first.runtime, 'd4', (v) => v.state === 'elsewhere');
    await vi.waitFor(async () => expect((await first.store.loadRestorable('d4'))?.checkpoint?.timers).toBeUndefined());
    await first.runtime.close();
    const second = await start({ machines: [timers], file });
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await second.runtime.view('d4')).state).toBe('elsewhere');
    const backAt = Date.now();
    await second.runtime.send('d4', { type: 'back' });
    const view = await waitForView(second.runtime, 'd4', (v) => v.state === 'late', 5_000);
    expect(contextOf(view).fired[0]!.at - backAt).toBeGreaterThanOrEqual(400);
  });

  it('a delayed raise keeps its deadline too, and is delivered once', async () => {
    const file = tempDbFile();
    const first = await start({ machines: [timers], file });
    await first.runtime.spawn('timers', { id: 'd5' });
    await first.runtime.send('d5', { type: 'remind' });
    await vi.waitFor(async () => expect((await first.store.loadRestorable('d5'))?.checkpoint?.timers?.map((t) => t.id).sort()).toEqual(['reminder', 'xstate.after.patience.timers.waiting']));
    await first.runtime.close();
    const second = await start({ machines: [timers], file });
    const view = await waitForView(second.runtime, 'd5', (v) => v.state === 'late' && contextOf(v).pings === 1, 5_000);
    expect(contextOf(view).pings).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(contextOf(await second.runtime.view('d5')).pings).toBe(1);
  });

  it('a passivated agent is woken at its next deadline', async () => {
    const t = await start({ machines: [timers], passivateAfterMs: 20 });
    const spawnedAt = Date.now();
    await t.runtime.spawn('timers', { id: 'd6' });
    await vi.waitFor(() => expect(t.runtime.liveAgents).toBe(0), { timeout: 300 });
    const view = await waitForView(t.runtime, 'd6', (v) => v.state === 'late', 5_000);
    const [fired] = contextOf(view).fired;
    expect(fired!.at - spawnedAt).toBeGreaterThanOrEqual(400);
    expect(fired!.at - spawnedAt).toBeLessThan(400 + 1_500);
  });
});
