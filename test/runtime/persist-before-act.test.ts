import { lastUserText } from '../../src/llm/client.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';
import { isIdleWithProgress, recordingLlm, startRuntime, waitForView, type TestRuntime } from '../helpers/runtime.js';

describe('persist, then act', () => {
  let t: TestRuntime | undefined;
  let sink: WebhookSink | undefined;
  afterEach(async () => {
    await t?.runtime.close();
    await sink?.close();
    t = sink = undefined;
  });

  const lastCheckpoint = (agentId: string) =>
    t!.store.db.prepare('select seq, state from checkpoints where agent_id = ? order by seq desc limit 1').get(agentId) as
      | { seq: number; state: string }
      | undefined;

  it('starts the LLM call only once the checkpoint that invoked it is committed', async () => {
    const seenAtCall: unknown[] = [];
    const { llm } = recordingLlm((request) => {
      seenAtCall.push(lastCheckpoint('a1')?.state && JSON.parse(lastCheckpoint('a1')!.state));
      return `answer to ${lastUserText(request)}`;
    });
    t = await startRuntime({ llm });
    await t.runtime.spawn('agent', { id: 'a1', input: { tasks: ['t1', 't2'] } });
    await waitForView(t.runtime, 'a1', isIdleWithProgress(2));
    expect(seenAtCall).toEqual([{ callingLLM: 'requesting' }, { callingLLM: 'requesting' }]);
  });

  it('sends the effect only once the answer is in a committed checkpoint', async () => {
    const answersCommittedAtDelivery: Promise<boolean>[] = [];
    sink = await startWebhookSink({
      onDelivery: ({ body }) => {
        const { response } = body as { response: string };
        // The rows committed when the webhook arrives (read now), put back together by the store.
        const persisted = t!.store.db.prepare(`select seq from checkpoints where agent_id = 'a1' and state = '"persisted"'`).pluck().all() as number[];
        const checkpoints = persisted.map((seq) => t!.store.getCheckpoint('a1', seq));
        answersCommittedAtDelivery.push(
          Promise.all(checkpoints).then((found) => found.some((c) => (JSON.parse(c!.snapshot) as { context: { answer: unknown } }).context.answer === response)),
        );
      },
    });
    t = await startRuntime();
    await t.runtime.spawn('agent', { id: 'a1', input: { tasks: ['t1', 't2', 't3'], webhook: sink.url } });
    await waitForView(t.runtime, 'a1', isIdleWithProgress(3));
    expect(await Promise.all(answersCommittedAtDelivery)).toEqual([true, true, true]);
  });

  it('never calls the LLM again for a task whose answer is in a committed checkpoint, from whichever checkpoint it restarts', async () => {
    const recorder = recordingLlm();
    t = await startRuntime({ llm: recorder.llm });
    await t.runtime.spawn('agent', { id: 'origin', input: { tasks: ['only'] } });
    await waitForView(t.runtime, 'origin', isIdleWithProgress(1));
    expect(recorder.callsFor('only')).toBe(1);

    const checkpoints = await t.store.listCheckpoints('origin');
    expect(checkpoints.map((c) => c.state)).toEqual([{ callingLLM: 'requesting' }, 'persisted', { sideEffect: 'requesting' }, 'idle']);
    for (const checkpoint of checkpoints) {
      const before = recorder.callsFor('only');
      // A fork restores the checkpoint into a fresh actor, exactly as recovery after a crash does.
      const fork = await t.runtime.fork('origin', checkpoint.seq, `fork-${checkpoint.seq}`);
      await waitForView(t.runtime, fork.id, isIdleWithProgress(1));
      const answerWasCommitted = checkpoint.seq > 1;
      expect({ from: checkpoint.state, calls: recorder.callsFor('only') - before }).toEqual({
        from: checkpoint.state,
        calls: answerWasCommitted ? 0 : 1,
      });
    }
  });
});
