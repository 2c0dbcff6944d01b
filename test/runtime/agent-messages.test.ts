// Agents messaging agents in one process (`sendToAgent`): the message is in the recipient's inbox in
// the same transaction as the sender's checkpoint, delivered once, to a recipient in memory or not;
// a failed commit sends nothing. (The SIGKILL version: test/e2e/delays-crash.test.ts.)
import { describe, expect, it, vi } from 'vitest';
import { crashableStore } from '../../src/testing/index.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { counter, pinger } from '../e2e/delays-machine.js';
import { runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { tempDbFile } from '../helpers/temp.js';

const got = (view: { context: unknown }) => (view.context as { got: string[] }).got;

describe('agents messaging agents', () => {
  const start = runtimesClosedAfterEach();

  it('puts the message in the recipient\'s inbox with the sender\'s checkpoint, under a key of that checkpoint, once', async () => {
    const t = await start({ machines: [pinger, counter] });
    await t.runtime.spawn('counter', { id: 'c1' });
    await t.runtime.spawn('pinger', { id: 'p1' });
    await t.runtime.send('p1', { type: 'ping', to: 'c1', n: 1 });
    await t.runtime.send('p1', { type: 'ping', to: 'c1', n: 2 });
    const view = await waitForView(t.runtime, 'c1', (v) => got(v).length === 2);
    expect(got(view)).toEqual(['p1#1', 'p1#2']);
    // In the inbox as events of its own, keyed by the sender's checkpoints.
    const inbox = await t.store.eventsAfter('c1', 0);
    expect(inbox.map((e) => [e.event, e.idempotencyKey])).toEqual([
      [{ type: 'msg', n: 1, from: 'p1' }, 'p1:2:0'],
      [{ type: 'msg', n: 2, from: 'p1' }, 'p1:3:0'],
    ]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(got(await t.runtime.view('c1'))).toEqual(['p1#1', 'p1#2']);
  });

  it('wakes a recipient that is not in memory', async () => {
    const t = await start({ machines: [pinger, counter], passivateAfterMs: 20 });
    await t.runtime.spawn('counter', { id: 'c2' });
    await t.runtime.spawn('pinger', { id: 'p2' });
    await vi.waitFor(() => expect(t.runtime.liveAgents).toBe(0));
    await t.runtime.send('p2', { type: 'ping', to: 'c2', n: 7 });
    expect(got(await waitForView(t.runtime, 'c2', (v) => got(v).length === 1))).toEqual(['p2#7']);
  });

  it('drops a message to an agent that does not exist, and the sender goes on', async () => {
    const t = await start({ machines: [pinger, counter] });
    await t.runtime.spawn('pinger', { id: 'p3' });
    await t.runtime.send('p3', { type: 'ping', to: 'nobody', n: 1 });
    const view = await waitForView(t.runtime, 'p3', (v) => (v.context as { sent: number }).sent === 1);
    expect(view.status).toBe('active');
    expect(await t.store.getAgent('nobody')).toBeUndefined();
  });

  it('sends nothing when the sender\'s checkpoint is not committed; the restored sender sends it again, once', async () => {
    const file = tempDbFile();
    const crashable = crashableStore(await openSqliteStore(file));
    const t = await start({ machines: [pinger, counter], store: crashable.store });
    await t.runtime.spawn('counter', { id: 'c4' });
    await t.runtime.spawn('pinger', { id: 'p4' });
    await waitForView(t.runtime, 'p4', () => true);
    // The ping's event is committed; the checkpoint of its transition (seq 2), with the message, is not.
    crashable.crashBeforeCheckpoint(2);
    await t.runtime.send('p4', { type: 'ping', to: 'c4', n: 1 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const reader = await openSqliteStore(file);
    expect(await reader.eventsAfter('c4', 0)).toEqual([]);
    expect((await reader.getAgent('p4'))?.lastSeq).toBe(1);
    await reader.close();
    await t.runtime.close().catch(() => undefined);

    const again = await start({ machines: [pinger, counter], file });
    expect(got(await waitForView(again.runtime, 'c4', (v) => got(v).length === 1))).toEqual(['p4#1']);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(got(await again.runtime.view('c4'))).toEqual(['p4#1']);
  });
});
