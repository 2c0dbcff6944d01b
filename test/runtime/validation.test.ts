import { createMachine } from 'xstate';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { InvalidEventError, InvalidInputError } from '../../src/core/errors.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { runtimesClosedAfterEach } from '../helpers/runtime.js';

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
