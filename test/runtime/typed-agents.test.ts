// `runtime.agentsOf(definition)`: the typed handle delegates to the runtime, and refuses at run time
// what its types cannot see: an agent of another machine, a definition the runtime does not run.
import { assign, setup } from 'xstate';
import { describe, expect, it } from 'vitest';
import { ConflictError, InvalidInputError, NotFoundError, type MachineDefinition } from '../../src/index.js';
import { runtimesClosedAfterEach } from '../helpers/runtime.js';

const counterMachine = setup({ types: { context: {} as { count: number }, events: {} as { type: 'inc' }, input: {} as { start?: number } } }).createMachine({
  id: 'counter',
  context: ({ input }) => ({ count: input.start ?? 0 }),
  on: { inc: { actions: assign({ count: ({ context }) => context.count + 1 }) } },
});
const counterDefinition = { name: 'counter', machine: counterMachine } satisfies MachineDefinition;
/** Another machine that also takes `inc`: the event alone would not tell the two apart. */
const otherDefinition = { name: 'other', machine: counterMachine.provide({}) } satisfies MachineDefinition;

describe('runtime.agentsOf(definition)', () => {
  const startRuntime = runtimesClosedAfterEach();

  it('spawns, sends, views and waits through the runtime, with the machine\'s context', async () => {
    const { runtime } = await startRuntime({ machines: [counterDefinition] });
    const counters = runtime.agentsOf(counterDefinition);
    const { view, created } = await counters.spawn({ id: 'c1', input: { start: 2 } });
    expect({ created, count: view.context.count, machine: view.machine }).toEqual({ created: true, count: 2, machine: 'counter' });
    expect(await counters.send('c1', { type: 'inc' }, 'k1')).toEqual({ seq: 1, duplicate: false });
    expect(await counters.send('c1', { type: 'inc' }, 'k1')).toEqual({ seq: 1, duplicate: true });
    const counted = await counters.waitFor('c1', (v) => v.context.count === 3, { timeoutMs: 5_000 });
    expect(counted.context).toEqual({ count: 3 });
    expect((await counters.view('c1')).context.count).toBe(3);
  });

  it("refuses an agent of another machine (ConflictError), and stores none of the events sent to it", async () => {
    const { runtime, store } = await startRuntime({ machines: [counterDefinition, otherDefinition] });
    await runtime.spawn('other', { id: 'o1' });
    const counters = runtime.agentsOf(counterDefinition);
    await expect(counters.send('o1', { type: 'inc' })).rejects.toThrow(ConflictError);
    await expect(counters.view('o1')).rejects.toThrow('Agent "o1" runs machine "other", not "counter".');
    await expect(counters.waitFor('o1', () => true)).rejects.toThrow(ConflictError);
    // The runtime's own refusal of a spawn of an id another machine has.
    await expect(counters.spawn({ id: 'o1' })).rejects.toThrow(ConflictError);
    expect(await store.getAgent('o1')).toMatchObject({ machine: 'other', eventSeq: 0 });
    await expect(counters.view('nobody')).rejects.toThrow(NotFoundError);
  });

  it('refuses a definition the runtime does not run: not registered, or registered with another machine', async () => {
    const { runtime } = await startRuntime({ machines: [counterDefinition] });
    expect(() => runtime.agentsOf(otherDefinition)).toThrow(NotFoundError);
    expect(() => runtime.agentsOf({ name: 'counter', machine: otherDefinition.machine })).toThrow(InvalidInputError);
    // A definition object of its own with the registered machine is the same machine.
    expect(runtime.agentsOf({ name: 'counter', machine: counterMachine }).machineName).toBe('counter');
  });
});
