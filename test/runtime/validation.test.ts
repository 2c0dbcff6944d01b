import { assign, createMachine, setup } from 'xstate';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { InvalidEventError, InvalidInputError } from '../../src/core/errors.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { takesEventType } from '../../src/runtime/registered-machine.js';
import { runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';

const bulk: MachineDefinition = {
  name: 'bulk',
  machine: createMachine({ id: 'bulk', initial: 'idle', states: { idle: { on: { load: {} } } } }),
  events: { load: z.object({ type: z.literal('load'), items: z.array(z.number()) }) },
};

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('validation errors stay short however much is wrong', () => {
  const start = runtimesClosedAfterEach();
  const machines = () => [agentDefinition({ llm: createSimulatedLlm() }), bulk];

  it('names the first issues of a spawn input and counts the rest', async () => {
    const t = await start({ machines: machines() });
    const err = await rejection(t.runtime.spawn('agent', { id: 'a1', input: { tasks: Array.from({ length: 10_000 }, () => '') } }));
    expect(err).toBeInstanceOf(InvalidInputError);
    expect(err.message.length).toBeLessThan(1000);
    expect(err.message).toMatch(/^Invalid input: tasks\.0: .+; tasks\.1: .+ and 9995 more\.$/);
    expect(await t.store.getAgent('a1')).toBeUndefined();
  });

  it('names the first issues of an event and counts the rest', async () => {
    const t = await start({ machines: machines() });
    await t.runtime.spawn('bulk', { id: 'b1' });
    const err = await rejection(t.runtime.send('b1', { type: 'load', items: Array.from({ length: 10_000 }, (_, i) => `item ${i}`) }));
    expect(err).toBeInstanceOf(InvalidEventError);
    expect(err.message.length).toBeLessThan(1000);
    expect(err.message).toContain('Invalid "load" event: items.0: ');
    expect(err.message).toContain('and 9995 more.');
    expect((await t.store.getAgent('b1'))?.eventSeq).toBe(0);
  });

  it('cuts one issue that lists thousands of unknown keys', async () => {
    const t = await start({ machines: machines() });
    await t.runtime.spawn('agent', { id: 'a1' });
    const extra = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`key${i}`, i]));
    const err = await rejection(t.runtime.send('a1', { type: 'task.add', task: 't', ...extra }));
    expect(err).toBeInstanceOf(InvalidEventError);
    expect(err.message.length).toBeLessThan(1000);
    expect(err.message).toContain('Invalid "task.add" event: (value): ');
    expect(err.message).toContain('key0');
  });
});

/** Each transition notes the type it took, so a test sees which one ran. */
const noting = (target: string) => ({ target, actions: 'note' as const });
const notingSetup = setup({
  types: { context: {} as { took: string | null } },
  actions: { note: assign({ took: ({ event }) => event.type }) },
});

const anyEvent: MachineDefinition = {
  name: 'any',
  machine: notingSetup.createMachine({
    id: 'any',
    initial: 'idle',
    context: { took: null },
    states: {
      idle: { on: { explicit: noting('explicitly'), '*': noting('caught') } },
      caught: { on: { reset: noting('idle') } },
      explicitly: { on: { reset: noting('idle') } },
    },
  }),
};

const partialEvent: MachineDefinition = {
  name: 'partial',
  machine: notingSetup.createMachine({
    id: 'partial',
    initial: 'idle',
    context: { took: null },
    states: {
      idle: { on: { 'event.special': noting('special'), 'event.*': noting('caught') } },
      caught: { on: { reset: noting('idle') } },
      special: { on: { reset: noting('idle') } },
    },
  }),
  // Keyed by the descriptor: checks `event.a` and the rest, not `event.special` (which has its own).
  events: {
    'event.*': z.object({ type: z.string(), n: z.number().optional() }).strict(),
    'event.special': z.object({ type: z.literal('event.special') }),
  },
};

describe('wildcard event descriptors', () => {
  const start = runtimesClosedAfterEach();
  const machines = () => [anyEvent, partialEvent];
  const tookIn = (state: string, took: string) => (v: { state: unknown; context: unknown }) =>
    v.state === state && (v.context as { took: string | null }).took === took;

  it("lists '*' and 'event.*' among the machine's event types, as written", async () => {
    const t = await start({ machines: machines() });
    expect(t.runtime.machine('any').eventTypes).toEqual(['*', 'explicit', 'reset']);
    expect(t.runtime.machine('partial').eventTypes).toEqual(['event.*', 'event.special', 'reset']);
  });

  it("takes any user type with '*', and the transition runs; an explicit type wins over it", async () => {
    const t = await start({ machines: machines() });
    await t.runtime.spawn('any', { id: 'w1' });
    // `reset` too: in `idle`, '*' takes it.
    expect(t.runtime.acceptedEvents(await t.runtime.view('w1'))).toEqual(['*', 'explicit', 'reset']);
    await t.runtime.send('w1', { type: 'anything', payload: { x: 1 } });
    await waitForView(t.runtime, 'w1', tookIn('caught', 'anything'));
    expect(t.runtime.acceptedEvents(await t.runtime.view('w1'))).toEqual(['reset']);
    await t.runtime.send('w1', { type: 'reset' });
    await waitForView(t.runtime, 'w1', tookIn('idle', 'reset'));
    await t.runtime.send('w1', { type: 'explicit' });
    await waitForView(t.runtime, 'w1', tookIn('explicitly', 'explicit'));
  });

  it.each(['xstate.init', 'xstate.done.actor.x', 'runtime.committed', 'agent.done', 'agent.response', '*', 'event.*'])(
    "refuses the reserved type %s even with '*'",
    async (type) => {
      const t = await start({ machines: machines() });
      await t.runtime.spawn('any', { id: 'w2' });
      expect(await rejection(t.runtime.send('w2', { type }))).toBeInstanceOf(InvalidEventError);
      expect((await t.store.getAgent('w2'))?.eventSeq).toBe(0);
    },
  );

  it("takes event.a and event.a.b with 'event.*', refuses other and eventx, and an explicit type wins", async () => {
    const t = await start({ machines: machines() });
    await t.runtime.spawn('partial', { id: 'p1' });
    for (const type of ['other', 'eventx', 'event.*', 'xstate.init']) {
      const err = await rejection(t.runtime.send('p1', { type }));
      expect(err).toBeInstanceOf(InvalidEventError);
      expect(err.message).toContain('known types: event.*, event.special, reset');
    }
    expect((await t.store.getAgent('p1'))?.eventSeq).toBe(0);
    // XState's rule: 'event.*' matches `event` itself too, and `event.` (an empty last token).
    const partial = t.runtime.machine('partial');
    expect(['event', 'event.', 'event.a', 'event.a.b', 'event.special'].every((type) => takesEventType(partial, type))).toBe(true);
    expect(['even', 'events', 'eventx.a', 'x.event.a', '.event'].some((type) => takesEventType(partial, type))).toBe(false);
    expect(t.runtime.acceptedEvents(await t.runtime.view('p1'))).toEqual(['event.*', 'event.special']);
    for (const type of ['event.a', 'event.a.b']) {
      await t.runtime.send('p1', { type, n: 1 });
      await waitForView(t.runtime, 'p1', tookIn('caught', type));
      await t.runtime.send('p1', { type: 'reset' });
      await waitForView(t.runtime, 'p1', tookIn('idle', 'reset'));
    }
    await t.runtime.send('p1', { type: 'event.special' });
    await waitForView(t.runtime, 'p1', tookIn('special', 'event.special'));
  });

  it("checks a matched type's payload with the schema keyed by the descriptor, unless the type has its own", async () => {
    const t = await start({ machines: machines() });
    await t.runtime.spawn('partial', { id: 'p2' });
    const err = await rejection(t.runtime.send('p2', { type: 'event.a', n: 'one' }));
    expect(err).toBeInstanceOf(InvalidEventError);
    expect(err.message).toContain('Invalid "event.a" event: n: ');
    expect(await rejection(t.runtime.send('p2', { type: 'event.a', extra: true }))).toBeInstanceOf(InvalidEventError);
    expect((await t.store.getAgent('p2'))?.eventSeq).toBe(0);
    // `event.special`'s own schema (not strict) applies, not the descriptor's.
    expect(await t.runtime.send('p2', { type: 'event.special', extra: true })).toMatchObject({ seq: 1 });
  });
});
