// A machine's new version restores its older checkpoints through the upgrades its definition lists;
// a checkpoint no upgrade covers, or an upgrade that fails, quarantines only its agent.
import { describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';

const counter = setup({ types: { context: {} as { count: number }, events: {} as { type: 'inc' } } }).createMachine({
  id: 'counter',
  context: { count: 0 },
  on: { inc: { actions: assign({ count: ({ context }) => context.count + 1 }) } },
});
const countOf = (v: { context: unknown }) => (v.context as { count: number }).count;

describe('machine versions and upgrades', () => {
  const start = runtimesClosedAfterEach();

  async function fileWithCountAt2(): Promise<string> {
    const t = await start({ machines: [{ name: 'counter', machine: counter, version: '1' }] });
    await t.runtime.spawn('counter', { id: 'c1' });
    await t.runtime.send('c1', { type: 'inc' });
    await t.runtime.send('c1', { type: 'inc' });
    await waitForView(t.runtime, 'c1', (v) => countOf(v) === 2);
    await t.runtime.close();
    return t.file;
  }

  it('restores a checkpoint of an earlier version through its upgrade, and writes the new version after', async () => {
    const file = await fileWithCountAt2();
    const v2: MachineDefinition = {
      name: 'counter',
      machine: counter,
      version: '2',
      // Version 2 counts in tens: an old count means ten times as much.
      upgrades: { '1': (snapshot) => ({ ...snapshot, context: { count: (snapshot.context as { count: number }).count * 10 } }) },
    };
    const t = await start({ file, machines: [v2] });
    expect(countOf(await t.runtime.view('c1'))).toBe(20);
    await t.runtime.send('c1', { type: 'inc' });
    await waitForView(t.runtime, 'c1', (v) => countOf(v) === 21);
    const [last] = await t.store.listCheckpoints('c1', { newest: 1 });
    expect((await t.store.getCheckpoint('c1', last!.seq))?.machineVersion).toBe('2');
  });

  it.each([
    ['no upgrade from the stored version', {}, /version 1 of "counter", this process runs 2 and has no upgrade from it/],
    ['an upgrade that throws', { '1': () => { throw new Error('cannot read version 1 counts'); } }, /cannot read version 1 counts/],
    ['an upgrade that returns no snapshot', { '1': () => ({}) as never }, /upgrade from version 1 did not return a persisted snapshot/],
  ])('quarantines the agent, with a message saying why, on %s', async (_case, upgrades, reason) => {
    const file = await fileWithCountAt2();
    const t = await start({ file, machines: [{ name: 'counter', machine: counter, version: '2', upgrades }] });
    const agent = await t.store.getAgent('c1');
    expect(agent?.status).toBe('error');
    expect(agent?.error?.name).toBe('CorruptStateError');
    expect(agent?.error?.message).toMatch(reason);
  });
});
