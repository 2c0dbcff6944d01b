import { lastUserText } from '../../src/llm/client.js';
import { describe, expect, it, vi } from 'vitest';
import { StepError } from '../../src/core/errors.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { crashableStore } from '../../src/testing/index.js';
import { tempDbFile } from '../helpers/temp.js';
import { hangUntilAborted, isIdleWithProgress, recordingLlm, runtimesClosedAfterEach, startRuntime, waitForView } from '../helpers/runtime.js';

describe('passivation: memory follows the working set', () => {
  const start = runtimesClosedAfterEach();

  it('lets a resting agent leave memory and brings it back on its next event', async () => {
    const t = await start({ passivateAfterMs: 20 });
    await t.runtime.spawn('agent', { id: 'a1', input: { tasks: ['t1'] } });
    await waitForView(t.runtime, 'a1', isIdleWithProgress(1));
    await vi.waitFor(() => expect(t.runtime.liveAgents).toBe(0));

    // Still fully visible while passivated…
    expect(await t.runtime.view('a1')).toMatchObject({ status: 'active', state: 'idle', progress: 1 });
    // …and woken by its next event, which it processes like any other.
    await t.runtime.send('a1', { type: 'task.add', task: 't2' });
    expect(t.runtime.liveAgents).toBe(1);
    await waitForView(t.runtime, 'a1', isIdleWithProgress(2));
    await vi.waitFor(() => expect(t.runtime.liveAgents).toBe(0));
    expect((await t.runtime.view('a1')).context).toMatchObject({ taken: 2, progress: 2 });
  });

  it('lets a woken agent leave memory again after an event its state ignores', async () => {
    const t = await start({ passivateAfterMs: 20 });
    await t.runtime.spawn('agent', { id: 'a1' });
    await vi.waitFor(() => expect(t.runtime.liveAgents).toBe(0));
    // `retry` is for a failed agent: an idle one consumes it without a transition, so no checkpoint.
    expect(t.runtime.acceptedEvents(await t.runtime.view('a1'))).not.toContain('retry');
    await t.runtime.send('a1', { type: 'retry' });
    expect(t.runtime.liveAgents).toBe(1);
    await vi.waitFor(() => expect(t.runtime.liveAgents).toBe(0));
    expect(await t.store.getAgent('a1')).toMatchObject({ status: 'active', lastSeq: 1, inboxPosition: 1, eventSeq: 1 });
    // Still an ordinary agent afterwards: its next event wakes it and is processed.
    await t.runtime.send('a1', { type: 'task.add', task: 't1' });
    await waitForView(t.runtime, 'a1', isIdleWithProgress(1));
  });

  it('lets a live agent that gets an ignored event leave memory once it rests', async () => {
    const t = await start({ passivateAfterMs: 20 });
    await t.runtime.spawn('agent', { id: 'a1' });
    await t.runtime.send('a1', { type: 'retry' });
    await vi.waitFor(() => expect(t.runtime.liveAgents).toBe(0));
  });

  it('restores an agent that crashed at a commit barrier: it is not at rest, and moves on once restored', async () => {
    // A process that dies after committing `persisted` (seq 2) and before its release (seq 3).
    const file = tempDbFile();
    const raw = await openSqliteStore(file);
    const { store, crashBeforeCheckpoint } = crashableStore(raw);
    crashBeforeCheckpoint(3);
    // Started without the after-each close: this process is cut off from its store, as a dead one is.
    const { runtime: crashed } = await startRuntime({ store, llm: recordingLlm().llm, reloadDelayMs: 2 ** 31 - 1 });
    await crashed.spawn('agent', { id: 'a1', input: { tasks: ['t1'] } });
    await vi.waitFor(async () => expect(await raw.getAgent('a1')).toMatchObject({ state: 'persisted', lastSeq: 2 }));
    await raw.close();

    // With passivation on, recovery restores only agents that are not at rest: a barrier is not.
    const llm = recordingLlm();
    const second = await start({ file, llm: llm.llm, passivateAfterMs: 20 });
    await waitForView(second.runtime, 'a1', isIdleWithProgress(1));
    expect(llm.calls).toEqual([]); // the committed answer was used, not asked for again
  });

  it('lets a recovered agent leave memory when the event that brought it back is ignored', async () => {
    const first = await start();
    await first.runtime.spawn('agent', { id: 'a1' });
    await first.runtime.close();
    // An event committed but not delivered before the stop: recovery loads the agent for it.
    const store = await openSqliteStore(first.file);
    await store.commit([{ kind: 'event', agentId: 'a1', event: { type: 'retry' }, idempotencyKey: null, at: new Date().toISOString() }]);
    await store.close();

    const second = await start({ file: first.file, passivateAfterMs: 20 });
    expect(second.runtime.liveAgents).toBe(1);
    await vi.waitFor(() => expect(second.runtime.liveAgents).toBe(0));
    expect(await second.store.getAgent('a1')).toMatchObject({ status: 'active', lastSeq: 1, inboxPosition: 1 });
  });

  it('delivers events already in the inbox before the one that wakes the agent, each once', async () => {
    const llm = recordingLlm();
    const t = await start({ passivateAfterMs: 10, llm: llm.llm });
    await t.runtime.spawn('agent', { id: 'a1' });
    await vi.waitFor(() => expect(t.runtime.liveAgents).toBe(0));
    // Committed behind the runtime's back (as another writer would): only the store knows of them.
    const at = new Date().toISOString();
    await t.store.commit(['first', 'second'].map((task) => ({ kind: 'event' as const, agentId: 'a1', event: { type: 'task.add', task }, idempotencyKey: null, at })));
    expect(await t.runtime.send('a1', { type: 'task.add', task: 'third' })).toEqual({ seq: 3, duplicate: false });
    await waitForView(t.runtime, 'a1', isIdleWithProgress(3));
    expect(llm.calls.map((c) => lastUserText(c))).toEqual(['first', 'second', 'third']);
  });

  it('wakes an agent from one read of its row and last checkpoint', async () => {
    const t = await start({ passivateAfterMs: 10 });
    await t.runtime.spawn('agent', { id: 'a1' });
    await vi.waitFor(() => expect(t.runtime.liveAgents).toBe(0));
    const reads = ['getAgent', 'getCheckpoint', 'loadRestorable', 'eventsAfter'] as const;
    const spies = Object.fromEntries(reads.map((name) => [name, vi.spyOn(t.store, name)]));
    await t.runtime.send('a1', { type: 'task.add', task: 't1' });
    // The row once to check the event against the agent's machine, then one read to restore it (before
    // the event is committed, so that a damaged one is refused: its event is handed over, not read back).
    expect(Object.fromEntries(reads.map((name) => [name, spies[name]!.mock.calls.length]))).toEqual({
      getAgent: 1, getCheckpoint: 0, loadRestorable: 1, eventsAfter: 0,
    });
    await waitForView(t.runtime, 'a1', isIdleWithProgress(1));
  });

  it('keeps an agent in memory while something runs for it', async () => {
    const hanging = recordingLlm((_, signal) => hangUntilAborted(signal));
    const t = await start({ passivateAfterMs: 10, llm: hanging.llm });
    await t.runtime.spawn('agent', { id: 'busy', input: { tasks: ['slow'] } });
    await waitForView(t.runtime, 'busy', () => hanging.calls.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(t.runtime.liveAgents).toBe(1);
  });

  it('recovers working agents and leaves resting ones on disk until they get an event', async () => {
    const hanging = recordingLlm((_, signal) => hangUntilAborted(signal));
    const first = await start({ llm: hanging.llm });
    await first.runtime.spawn('agent', { id: 'resting-1' });
    await first.runtime.spawn('agent', { id: 'resting-2' });
    await first.runtime.spawn('agent', { id: 'working', input: { tasks: ['in flight'] } });
    await waitForView(first.runtime, 'working', () => hanging.calls.length === 1);
    await first.runtime.close();

    const llm = recordingLlm();
    const second = await start({ file: first.file, llm: llm.llm, passivateAfterMs: 60_000 });
    expect(second.runtime.liveAgents).toBe(1);
    await waitForView(second.runtime, 'working', isIdleWithProgress(1));
    await second.runtime.send('resting-2', { type: 'task.add', task: 'wake up' });
    await waitForView(second.runtime, 'resting-2', isIdleWithProgress(1));
    expect(second.runtime.liveAgents).toBe(2);
    expect(llm.calls.map((c) => lastUserText(c)).sort()).toEqual(['in flight', 'wake up']);
  });

  it('wakes an agent once when several events race for it', async () => {
    const t = await start({ passivateAfterMs: 10 });
    await t.runtime.spawn('agent', { id: 'a1' });
    await vi.waitFor(() => expect(t.runtime.liveAgents).toBe(0));
    await Promise.all(['x', 'y', 'z'].map((task) => t.runtime.send('a1', { type: 'task.add', task })));
    const view = await waitForView(t.runtime, 'a1', isIdleWithProgress(3));
    expect(view.context).toMatchObject({ taken: 3 });
    expect((await t.store.listActions('a1')).filter((a) => a.action === 'callLlm')).toHaveLength(3);
  });
});

describe('accepted events', () => {
  const start = runtimesClosedAfterEach();

  it('lists what the current state takes, live or passivated', async () => {
    const failing = recordingLlm(() => {
      throw new StepError('permanent', 'llm_rejected', 'no');
    });
    const t = await start({ llm: failing.llm, passivateAfterMs: 10 });
    await t.runtime.spawn('agent', { id: 'idle-one' });
    expect(t.runtime.acceptedEvents(await t.runtime.view('idle-one'))).toEqual(['finish', 'task.add']);
    await t.runtime.spawn('agent', { id: 'failed-one', input: { tasks: ['x'] } });
    await waitForView(t.runtime, 'failed-one', (v) => v.state === 'failed');
    expect(t.runtime.acceptedEvents(await t.runtime.view('failed-one'))).toEqual(['retry', 'task.add', 'task.skip']);
    await vi.waitFor(() => expect(t.runtime.liveAgents).toBe(0));
    expect(t.runtime.acceptedEvents(await t.runtime.view('failed-one'))).toEqual(['retry', 'task.add', 'task.skip']);
    await t.runtime.send('idle-one', { type: 'finish' });
    await waitForView(t.runtime, 'idle-one', (v) => v.status === 'done');
    expect(t.runtime.acceptedEvents(await t.runtime.view('idle-one'))).toEqual([]);
  });
});
