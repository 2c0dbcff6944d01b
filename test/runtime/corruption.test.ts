import { describe, expect, it } from 'vitest';
import { assign, createMachine, fromPromise, setup } from 'xstate';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { isIdleWithProgress, startRuntime, waitForView, runtimesClosedAfterEach } from '../helpers/runtime.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';

/** A counter whose `boom` event throws inside an action, and whose `bigint` event stores what JSON cannot. */
const fragile = setup({
  types: { context: {} as { count: number; big?: unknown }, events: {} as { type: 'inc' } | { type: 'boom' } | { type: 'bigint' } },
}).createMachine({
  id: 'fragile',
  context: { count: 0 },
  on: {
    inc: { actions: assign({ count: ({ context }) => context.count + 1 }) },
    boom: {
      actions: () => {
        throw new Error('the action blew up');
      },
    },
    bigint: { actions: assign({ big: () => 10n }) },
  },
});
const fragileDefinition: MachineDefinition = { name: 'fragile', machine: fragile };

/** A machine that breaks XState's rule: its `mutate` event pushes onto a stored array in place. */
const mutating = setup({
  types: { context: {} as { lines: { text: string }[] }, events: {} as { type: 'mutate' } | { type: 'add' } },
}).createMachine({
  id: 'mutating',
  context: { lines: Array.from({ length: 40 }, (_, i) => ({ text: `line ${i} ${'x'.repeat(120)}` })) },
  on: {
    add: { actions: assign({ lines: ({ context }) => [...context.lines, { text: 'added' }] }) },
    mutate: {
      actions: ({ context }) => {
        context.lines[0]!.text = 'changed in place';
      },
    },
  },
});

describe('state corruption is detected, isolated to its agent, and reported', () => {
  const start = runtimesClosedAfterEach();

  /** Two idle agents on a file; `damage` then edits the victim's last checkpoint row by hand. */
  async function damagedFile(damage: (snapshot: string) => string, version?: string) {
    const first = await startRuntime();
    await first.runtime.spawn('agent', { id: 'victim' });
    await first.runtime.spawn('agent', { id: 'healthy' });
    await first.runtime.close();
    const store = await openSqliteStore(first.file);
    const row = store.db.prepare(`select seq, snapshot from checkpoints where agent_id = 'victim' order by seq desc limit 1`).get() as {
      seq: number;
      snapshot: string;
    };
    store.db
      .prepare(`update checkpoints set snapshot = ?, machine_version = coalesce(?, machine_version) where agent_id = 'victim' and seq = ?`)
      .run(damage(row.snapshot), version ?? null, row.seq);
    await store.close();
    return first.file;
  }

  async function expectQuarantined(file: string, reason: RegExp) {
    const t = await start({ file });
    const victim = await t.store.getAgent('victim');
    expect(victim?.status).toBe('error');
    expect(victim?.error?.name).toBe('CorruptStateError');
    expect(victim?.error?.message).toMatch(/Agent "victim" cannot be restored/);
    expect(victim?.error?.message).toMatch(reason);
    // The rest of the runtime goes on: the healthy agent takes work.
    await t.runtime.send('healthy', { type: 'task.add', task: 'still working' });
    await waitForView(t.runtime, 'healthy', isIdleWithProgress(1));
    await expect(t.runtime.send('victim', { type: 'task.add', task: 'x' })).rejects.toMatchObject({ code: 'conflict' });
  }

  it('quarantines an agent whose snapshot row is not JSON', async () => {
    await expectQuarantined(await damagedFile((s) => s.slice(0, 20)), /not valid JSON/);
  });

  it('quarantines an agent whose snapshot names a state the machine does not have', async () => {
    await expectQuarantined(await damagedFile((s) => s.replace('"value":"idle"', '"value":"vanished"')), /vanished/);
  });

  it('quarantines an agent whose snapshot runs an actor that is not registered', async () => {
    const withGhostChild = (s: string) => {
      const snapshot = JSON.parse(s) as { children: Record<string, unknown> };
      snapshot.children.ghost = { snapshot: { status: 'active' }, src: 'renamedActor', syncSnapshot: false };
      return JSON.stringify(snapshot);
    };
    await expectQuarantined(await damagedFile(withGhostChild), /"renamedActor" is not registered/);
  });

  it('quarantines an agent whose snapshot refers to a stored part that is gone', async () => {
    const first = await startRuntime();
    // A long task: its text is a part of the checkpoints, stored once and referred to.
    const long = `Summarise this: ${'a long and winding text '.repeat(60)}`;
    await first.runtime.spawn('agent', { id: 'victim', input: { tasks: [long] } });
    await first.runtime.spawn('agent', { id: 'healthy' });
    await waitForView(first.runtime, 'victim', isIdleWithProgress(1));
    await first.runtime.close();
    const store = await openSqliteStore(first.file);
    const { encoded } = store.db.prepare(`select encoded from checkpoints where agent_id = 'victim' order by seq desc limit 1`).get() as { encoded: number };
    expect(encoded).toBeGreaterThan(0);
    expect(store.db.prepare(`delete from snapshot_parts where agent_id = 'victim'`).run().changes).toBeGreaterThan(0);
    await store.close();
    await expectQuarantined(first.file, /refers to a part \S+ that is not stored/);
  });

  it('quarantines an agent whose checkpoint was written by another version of its machine', async () => {
    await expectQuarantined(await damagedFile((s) => s, '0'), /version 0/);
  });

  it('keeps the last checkpoint intact when an action throws inside a transition', async () => {
    const machines = [fragileDefinition, agentDefinition({ llm: createSimulatedLlm() })];
    const t = await start({ machines });
    await t.runtime.spawn('fragile', { id: 'f1' });
    await t.runtime.spawn('agent', { id: 'neighbour' });
    await t.runtime.send('f1', { type: 'inc' });
    await waitForView(t.runtime, 'f1', (v) => (v.context as { count: number }).count === 1);
    const before = await t.store.listCheckpoints('f1');

    await t.runtime.send('f1', { type: 'boom' });
    const failed = await waitForView(t.runtime, 'f1', (v) => v.status === 'error');
    expect(failed.context).toEqual({ count: 1 });
    expect(await t.store.listCheckpoints('f1')).toEqual(before);
    expect((await t.store.getAgent('f1'))?.error?.message).toBe('the action blew up');

    await t.runtime.send('neighbour', { type: 'task.add', task: 'unaffected' });
    await waitForView(t.runtime, 'neighbour', isIdleWithProgress(1));
  });

  it('fails a machine that changes a stored value in place, loudly, instead of storing a stale checkpoint', async () => {
    const t = await start({ machines: [{ name: 'mutating', machine: mutating }] });
    await t.runtime.spawn('mutating', { id: 'm1' });
    await t.runtime.send('m1', { type: 'add' });
    await waitForView(t.runtime, 'm1', (v) => (v.context as { lines: unknown[] }).lines.length === 41);
    await t.runtime.send('m1', { type: 'mutate' });
    await waitForView(t.runtime, 'm1', (v) => v.status === 'error');
    expect((await t.store.getAgent('m1'))?.error?.message).toMatch(/read.only|not extensible|Cannot assign/);
    // What was committed is what the machine had before the change.
    const [last] = await t.store.listCheckpoints('m1', { newest: 1 });
    const { snapshot } = await t.runtime.checkpoint('m1', last!.seq);
    expect((snapshot.context as { lines: { text: string }[] }).lines[0]!.text).toMatch(/^line 0 /);
  });

  it('refuses to checkpoint a context JSON cannot hold, and parks only that agent', async () => {
    const t = await start({ machines: [fragileDefinition] });
    await t.runtime.spawn('fragile', { id: 'f1' });
    await t.runtime.spawn('fragile', { id: 'f2' });
    const before = await t.store.listCheckpoints('f1');
    await t.runtime.send('f1', { type: 'bigint' });
    await waitForView(t.runtime, 'f1', (v) => v.status === 'error');
    expect(await t.store.listCheckpoints('f1')).toEqual(before);
    expect((await t.store.getAgent('f1'))?.error?.message).toMatch(/BigInt/);
    await t.runtime.send('f2', { type: 'inc' });
    await waitForView(t.runtime, 'f2', (v) => (v.context as { count: number }).count === 1);
  });

  it('fails an agent that spawns inline logic in assign (no checkpoint can name it) at that step, with a message saying so', async () => {
    // createMachine, not setup({}): setup types `spawn` to registered actors only.
    const inlineSpawn = createMachine({
      id: 'inlineSpawn',
      context: { ref: null as unknown },
      initial: 'idle',
      states: {
        idle: { on: { go: { target: 'spawned', actions: assign({ ref: ({ spawn }) => spawn(fromPromise(async () => 42), { id: 'worker' }) }) } } },
        spawned: { on: { go: 'idle' } },
      },
    });
    const t = await start({ machines: [{ name: 'inline-spawn', machine: inlineSpawn }] });
    await t.runtime.spawn('inline-spawn', { id: 's1' });
    await t.runtime.send('s1', { type: 'go' });
    const failed = await waitForView(t.runtime, 's1', (v) => v.status === 'error');
    expect(failed.state).toBe('idle');
    expect((await t.store.getAgent('s1'))?.error?.message).toMatch(/child "worker" was spawned with inline logic/);
  });
});
