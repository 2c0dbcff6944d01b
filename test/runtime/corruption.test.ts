import { describe, expect, it } from 'vitest';
import { assign, createMachine, fromPromise, setup } from 'xstate';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { isIdleWithProgress, startRuntime, waitForView, runtimesClosedAfterEach } from '../helpers/runtime.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { eventBodyHash } from '../../src/store/event-hash.js';
import type { InboxEvent } from '../../src/store/store.js';
import { createServer } from '../../src/http/app.js';

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

  async function expectQuarantined(file: string, reason: RegExp, code: string) {
    const t = await start({ file });
    const victim = await t.store.getAgent('victim');
    expect(victim?.status).toBe('error');
    expect(victim?.error?.name).toBe('CorruptStateError');
    expect(victim?.error?.message).toMatch(/Agent "victim" cannot be restored/);
    expect(victim?.error?.message).toMatch(reason);
    // Its view says why, from what is stored with its row.
    const view = await t.runtime.view('victim');
    expect(view).toMatchObject({ status: 'error', error: { code, message: expect.stringMatching(reason) } });
    // The rest of the runtime goes on: the healthy agent takes work.
    await t.runtime.send('healthy', { type: 'task.add', task: 'still working' });
    await waitForView(t.runtime, 'healthy', isIdleWithProgress(1));
    expect((await t.runtime.view('healthy')).error).toBeUndefined();
    const inbox = await t.store.eventsAfter('victim', 0);
    await expect(t.runtime.send('victim', { type: 'task.add', task: 'x' })).rejects.toMatchObject({ code: 'agent_in_error' });
    expect(await t.store.eventsAfter('victim', 0)).toEqual(inbox);
  }

  it('quarantines an agent whose snapshot row is not JSON', async () => {
    await expectQuarantined(await damagedFile((s) => s.slice(0, 20)), /not valid JSON/, 'snapshot_unreadable');
  });

  it('quarantines an agent whose snapshot names a state the machine does not have', async () => {
    await expectQuarantined(await damagedFile((s) => s.replace('"value":"idle"', '"value":"vanished"')), /vanished/, 'restore_failed');
  });

  it('quarantines an agent whose snapshot runs an actor that is not registered', async () => {
    const withGhostChild = (s: string) => {
      const snapshot = JSON.parse(s) as { children: Record<string, unknown> };
      snapshot.children.ghost = { snapshot: { status: 'active' }, src: 'renamedActor', syncSnapshot: false };
      return JSON.stringify(snapshot);
    };
    await expectQuarantined(await damagedFile(withGhostChild), /"renamedActor" is not registered/, 'restore_failed');
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
    await expectQuarantined(first.file, /refers to a part \S+ that is not stored/, 'snapshot_unreadable');
  });

  it('quarantines an agent whose checkpoint was written by another version of its machine', async () => {
    await expectQuarantined(await damagedFile((s) => s, '0'), /version 0/, 'version_unknown');
  });

  it('refuses an event to an agent resting on disk whose checkpoint turns out damaged (409), instead of stranding it in its inbox', async () => {
    const file = await damagedFile((s) => s.slice(0, 20));
    // With passivation on, resting agents stay on disk at start: the victim is read only for this event.
    const t = await start({ file, passivateAfterMs: 60_000 });
    expect((await t.store.getAgent('victim'))?.status).toBe('active');
    await expect(t.runtime.send('victim', { type: 'task.add', task: 'never read' }, 'key-1')).rejects.toMatchObject({ code: 'agent_in_error' });
    expect(await t.store.eventsAfter('victim', 0)).toEqual([]);
    expect(await t.runtime.view('victim')).toMatchObject({ status: 'error', error: { code: 'snapshot_unreadable' } });
  });

  it('says so over HTTP: the view has the error, an event is a 409 agent_in_error, and a list shows it too', async () => {
    const t = await start({ file: await damagedFile((s) => s, '0') });
    const app = createServer({ runtime: t.runtime });
    const view = (await (await app.request('/agents/victim')).json()) as Record<string, unknown>;
    expect(view).toMatchObject({ status: 'error', error: { code: 'version_unknown', message: expect.stringMatching(/version 0/) } });
    const sent = await app.request('/agents/victim/events', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"task.add","task":"x"}' });
    expect(sent.status).toBe(409);
    expect(await sent.json()).toMatchObject({ error: { code: 'agent_in_error', message: expect.stringMatching(/version_unknown/) } });
    const list = (await (await app.request('/agents?status=error')).json()) as { items: unknown[] };
    expect(list.items).toEqual([expect.objectContaining({ id: 'victim', error: { code: 'version_unknown', message: expect.any(String) } })]);
  });

  it("gives a fork of a quarantined agent the events it acknowledged and never read, and a fork of a healthy agent none of its events", async () => {
    const first = await startRuntime();
    await first.runtime.spawn('agent', { id: 'victim', input: { tasks: ['first'] } });
    await first.runtime.spawn('agent', { id: 'healthy', input: { tasks: ['first'] } });
    await waitForView(first.runtime, 'victim', isIdleWithProgress(1));
    await waitForView(first.runtime, 'healthy', isIdleWithProgress(1));
    await first.runtime.send('healthy', { type: 'task.add', task: 'second' });
    await waitForView(first.runtime, 'healthy', isIdleWithProgress(2));
    await first.runtime.close();
    // Two events acknowledged to their senders just before the crash, never read; then the last checkpoint is damaged.
    const store = await openSqliteStore(first.file);
    const late = (task: string): InboxEvent => ({ type: 'task.add', task });
    const at = new Date().toISOString();
    await store.commit([
      { kind: 'event', agentId: 'victim', event: late('late 1'), idempotencyKey: 'k1', bodyHash: eventBodyHash(late('late 1')), at },
      { kind: 'event', agentId: 'victim', event: late('late 2'), idempotencyKey: null, at },
    ]);
    const last = (await store.listCheckpoints('victim', { newest: 1 }))[0]!.seq;
    store.db.prepare(`update checkpoints set snapshot = 'garbage' where agent_id = 'victim' and seq = ?`).run(last);
    await store.close();

    const t = await start({ file: first.file });
    expect(await t.runtime.view('victim')).toMatchObject({ status: 'error', error: { code: 'snapshot_unreadable' } });
    await t.runtime.fork('victim', 1, 'victim-2');
    expect((await t.store.eventsAfter('victim-2', 0)).map((e) => [e.seq, e.event, e.idempotencyKey])).toEqual([
      [1, late('late 1'), 'k1'],
      [2, late('late 2'), null],
    ]);
    // From checkpoint 1 it does its first task again, then the two it was carried.
    await waitForView(t.runtime, 'victim-2', isIdleWithProgress(3));
    // Their keys came with them: a sender retrying against the fork is answered, not duplicated.
    expect(await t.runtime.send('victim-2', late('late 1'), 'k1')).toEqual({ seq: 1, duplicate: true });
    await expect(t.runtime.send('victim-2', late('other'), 'k1')).rejects.toMatchObject({ code: 'idempotency_key_reused' });

    // A healthy agent read its events itself: a fork from an old checkpoint does not replay them.
    await t.runtime.fork('healthy', 1, 'healthy-2');
    expect(await t.store.eventsAfter('healthy-2', 0)).toEqual([]);
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
