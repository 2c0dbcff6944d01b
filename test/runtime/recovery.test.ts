import { lastUserText } from '../../src/llm/client.js';
import { describe, expect, it } from 'vitest';
import { StepError } from '../../src/core/errors.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { hangUntilAborted, isIdleWithProgress, recordingLlm, runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';

describe('restart and recovery', () => {
  const start = runtimesClosedAfterEach();

  it('re-runs an LLM call that was in flight when the process stopped', async () => {
    const hanging = recordingLlm((_, signal) => hangUntilAborted(signal));
    const first = await start({ llm: hanging.llm });
    await first.runtime.spawn('agent', { id: 'a1', input: { tasks: ['t1'] } });
    await waitForView(first.runtime, 'a1', () => hanging.calls.length === 1);
    await first.runtime.close();

    const working = recordingLlm();
    const second = await start({ file: first.file, llm: working.llm });
    const view = await waitForView(second.runtime, 'a1', isIdleWithProgress(1));
    expect(working.callsFor('t1')).toBe(1);
    expect(view.context).toMatchObject({ taken: 1, progress: 1 });
  });

  it('resumes a backoff from its stored deadline instead of starting a new one', async () => {
    let failures = 1;
    const flaky = recordingLlm(() => {
      if (failures-- > 0) throw new StepError('transient', 'llm_unavailable', 'try later', { status: 503 });
      return 'fine';
    });
    const first = await start({ llm: flaky.llm, defaults: { baseDelayMs: 400, maxDelayMs: 400 } });
    await first.runtime.spawn('agent', { id: 'a1', input: { tasks: ['t1'] } });
    const waiting = await waitForView(first.runtime, 'a1', (v) => JSON.stringify(v.state) === '{"callingLLM":"backingOff"}');
    const deadline = (waiting.context as { nextAttemptAt: number }).nextAttemptAt;
    await first.runtime.close();

    const callTimes: number[] = [];
    const second = await start({
      file: first.file,
      llm: recordingLlm(() => (callTimes.push(Date.now()), 'fine')).llm,
      defaults: { baseDelayMs: 400, maxDelayMs: 400 },
    });
    const restored = await second.runtime.view('a1');
    expect((restored.context as { nextAttemptAt: number }).nextAttemptAt).toBe(deadline);
    await waitForView(second.runtime, 'a1', isIdleWithProgress(1));
    expect(callTimes).toHaveLength(1);
    expect(callTimes[0]).toBeGreaterThanOrEqual(deadline);
    expect((await second.runtime.view('a1')).context).toMatchObject({ attempt: 0, lastError: null });
  });

  it('processes events committed before a stop after the restart, in order, each once', async () => {
    const hanging = recordingLlm((_, signal) => hangUntilAborted(signal));
    const first = await start({ llm: hanging.llm });
    await first.runtime.spawn('agent', { id: 'a1' });
    // The agent is busy with t0, so the later events wait in its inbox.
    await first.runtime.send('a1', { type: 'task.add', task: 't0' });
    await waitForView(first.runtime, 'a1', () => hanging.calls.length === 1);
    for (const task of ['t1', 't2', 't3']) await first.runtime.send('a1', { type: 'task.add', task });
    await first.runtime.close();

    const working = recordingLlm();
    const second = await start({ file: first.file, llm: working.llm });
    await waitForView(second.runtime, 'a1', isIdleWithProgress(4));
    expect(working.calls.map((c) => lastUserText(c))).toEqual(['t0', 't1', 't2', 't3']);
    expect(await second.store.getAgent('a1')).toMatchObject({ eventSeq: 4, inboxPosition: 4 });

    // A third start finds nothing left to do: no event is delivered twice.
    await second.runtime.close();
    const third = await start({ file: first.file, llm: working.llm });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(working.calls).toHaveLength(4);
    expect((await third.runtime.view('a1')).progress).toBe(4);
  });

  it('consumes an event the current state ignores, without a checkpoint, so it is not replayed later', async () => {
    const t = await start({});
    await t.runtime.spawn('agent', { id: 'a1' });
    const before = (await t.store.getAgent('a1'))!;
    await t.runtime.send('a1', { type: 'retry' }); // only `failed` takes retry
    await t.runtime.close(); // commits what is queued
    const reopened = await openSqliteStore(t.file);
    expect(await reopened.getAgent('a1')).toMatchObject({ eventSeq: 1, inboxPosition: 1, lastSeq: before.lastSeq });
    await reopened.close();
  });

  it('leaves stopped agents stopped and done agents done across a restart', async () => {
    const first = await start({});
    await first.runtime.spawn('agent', { id: 'stopper' });
    await first.runtime.spawn('agent', { id: 'finisher' });
    await first.runtime.stop('stopper');
    await first.runtime.send('finisher', { type: 'finish' });
    await waitForView(first.runtime, 'finisher', (v) => v.status === 'done');
    await first.runtime.close();
    const second = await start({ file: first.file });
    expect(second.runtime.liveAgents).toBe(0);
    expect((await second.runtime.view('stopper')).status).toBe('stopped');
    expect((await second.runtime.view('finisher')).status).toBe('done');
  });
});
