// The reference agent's failure domains through the REAL stack: the runtime, a SQLite file, the
// official `openai` client over HTTP to a fake Chat Completions server, and fetch to a webhook sink.
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import type { AgentContext, AgentInput } from '../../src/agents/reference/types.js';
import type { ActionRecord } from '../../src/store/store.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { AgentView } from '../../src/runtime/views.js';
import { runtimesClosedAfterEach } from '../helpers/runtime.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';

const MAX_ATTEMPTS = 3;

let fake: FakeOpenAI;
let sink: WebhookSink;
let runtime: Runtime;

afterEach(async () => {
  await Promise.all([fake?.close(), sink?.close()]);
});
// Registered after the hook above, so it runs before it (vitest runs after-hooks as a stack): the
// runtime is closed before the servers it talks to.
const startRuntime = runtimesClosedAfterEach();

beforeEach(async () => {
  fake = await startFakeOpenAI();
  sink = await startWebhookSink();
  const llm = createOpenAiClient({ baseURL: fake.url, apiKey: 'test' });
  ({ runtime } = await startRuntime({ llm, defaults: { maxAttempts: MAX_ATTEMPTS, baseDelayMs: 20, maxDelayMs: 200, timeoutMs: 300 } }));
});

/**
 * Spawns an agent. Unless a test is about timeouts, its calls get a generous timeout: on a loaded
 * machine the server default of 300 ms could otherwise add a retry and change the call counts.
 */
async function spawn(id: string, input: AgentInput, options: { serverTimeout?: boolean } = {}): Promise<void> {
  const retry = options.serverTimeout ? input.retry : { timeoutMs: 10_000, ...input.retry };
  await runtime.spawn('agent', { id, input: { ...input, ...(retry ? { retry } : {}) } });
}

/** Polls the agent's view until `check` passes; returns that view. */
function viewWhen(id: string, check: (view: AgentView, context: AgentContext) => void): Promise<AgentView> {
  return vi.waitFor(
    async () => {
      const view = await runtime.view(id);
      check(view, view.context as AgentContext);
      return view;
    },
    { timeout: 15_000, interval: 10 },
  );
}

const idleAfter = (tasks: number) => (view: AgentView) => {
  expect(view.state).toBe('idle');
  expect(view.progress).toBe(tasks);
};

const isFailed = (view: AgentView) => expect(view.state).toBe('failed');

const contextOf = (view: AgentView) => view.context as AgentContext;

async function actions(id: string, action: 'callLlm' | 'runSideEffect'): Promise<ActionRecord[]> {
  return (await runtime.store.listActions(id)).filter((a) => a.action === action);
}

/** The parts of an action-log row a reader checks: which attempt, and how it ended. */
function outcome(row: ActionRecord) {
  const payload = row.payload as { attempt?: number };
  const result = row.result as { ok: boolean; error?: { kind?: string; status?: number; code?: string } };
  return result.ok
    ? { attempt: payload.attempt, ok: true }
    : { attempt: payload.attempt, ok: false, kind: result.error?.kind, status: result.error?.status, code: result.error?.code };
}

describe('a task that goes well', () => {
  test('its answer is posted to the webhook with Idempotency-Key <agentId>:1 and the contract body', async () => {
    await spawn('happy', { tasks: ['Say hi'], system: 'Be brief.', webhook: sink.url });
    const view = await viewWhen('happy', idleAfter(1));

    expect(fake.calls).toHaveLength(1);
    expect(fake.calls[0]).toMatchObject({
      model: 'gpt-4o-mini',
      authorization: 'Bearer test',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say hi' },
      ],
    });
    expect(sink.deliveries).toHaveLength(1);
    expect(sink.deliveries[0]!.idempotencyKey).toBe('happy:1');
    expect(sink.deliveries[0]!.body).toEqual({ agentId: 'happy', seq: 1, task: 'Say hi', response: 'answer: Say hi' });
    expect(contextOf(view)).toMatchObject({ answer: null, current: null, lastError: null, taken: 1 });
    expect((await actions('happy', 'callLlm')).map(outcome)).toEqual([{ attempt: 1, ok: true }]);
    expect((await actions('happy', 'runSideEffect')).map(outcome)).toEqual([{ attempt: 1, ok: true }]);

    await runtime.send('happy', { type: 'finish' });
    await viewWhen('happy', (v) => {
      expect(v.state).toBe('done');
      expect(v.status).toBe('done');
    });
  });

  test('a task added later gets the next seq in its key', async () => {
    await spawn('later', { webhook: sink.url });
    await runtime.send('later', { type: 'task.add', task: 'one' });
    await viewWhen('later', idleAfter(1));
    await runtime.send('later', { type: 'task.add', task: 'two' });
    await viewWhen('later', idleAfter(2));
    expect(sink.deliveries.map((d) => [d.idempotencyKey, (d.body as { task: string }).task])).toEqual([
      ['later:1', 'one'],
      ['later:2', 'two'],
    ]);
  });
});

describe('transient LLM failures', () => {
  test('500, then 502, then success: three calls, the failures in the action log', async () => {
    fake.enqueueFaults({ kind: 'status', status: 500 }, { kind: 'status', status: 502 });
    await spawn('flaky', { tasks: ['t1'], webhook: sink.url });
    await viewWhen('flaky', idleAfter(1));

    expect(fake.calls).toHaveLength(3);
    expect((await actions('flaky', 'callLlm')).map(outcome)).toEqual([
      { attempt: 1, ok: false, kind: 'transient', status: 500, code: 'llm_unavailable' },
      { attempt: 2, ok: false, kind: 'transient', status: 502, code: 'llm_unavailable' },
      { attempt: 3, ok: true },
    ]);
    expect(sink.deliveries).toHaveLength(1);
    expect(sink.deliveries[0]!.body).toMatchObject({ response: 'answer: t1' });
  });

  test('a hung call times out and is retried as transient', async () => {
    fake.enqueueFaults({ kind: 'hang' });
    await spawn('hung', { tasks: ['t1'], webhook: sink.url }, { serverTimeout: true });
    await viewWhen('hung', idleAfter(1));

    // The server sees the client hang up (the fake marks the call) once the SDK's timeout fires.
    await vi.waitFor(() => expect(fake.calls[0]!.outcome).toBe('aborted'));
    // Only the first call hangs; a later one may still time out on a loaded machine, so the tail is not pinned.
    const rows = (await actions('hung', 'callLlm')).map(outcome);
    expect(rows[0]).toEqual({ attempt: 1, ok: false, kind: 'transient', status: undefined, code: 'llm_timeout' });
    expect(rows.at(-1)).toEqual({ attempt: rows.length, ok: true });
    expect(fake.calls).toHaveLength(rows.length);
  });

  test('a Retry-After longer than the backoff sets the next attempt at least that far out', async () => {
    fake.enqueueFaults({ kind: 'status', status: 503, retryAfter: '1' });
    await spawn('patient', { tasks: ['t1'] });
    const backingOff = await viewWhen('patient', (v) => expect(v.state).toEqual({ callingLLM: 'backingOff' }));
    expect(contextOf(backingOff).nextAttemptAt! - fake.calls[0]!.at).toBeGreaterThanOrEqual(1_000);
    await viewWhen('patient', idleAfter(1));
    expect(fake.calls).toHaveLength(2);
  });

  test('a 429 is the provider asking to slow down, not a failed attempt: asked again after its Retry-After, inside the same attempt', async () => {
    fake.enqueueFaults({ kind: 'status', status: 429, retryAfter: '1' }, { kind: 'status', status: 429, retryAfter: '0' });
    await spawn('throttled', { tasks: ['t1'], webhook: sink.url });
    await viewWhen('throttled', idleAfter(1));

    expect(fake.calls).toHaveLength(3);
    expect(fake.calls[1]!.at - fake.calls[0]!.at).toBeGreaterThanOrEqual(1_000);
    // One attempt in the action log, which succeeded: the refusals used up none of maxAttempts.
    expect((await actions('throttled', 'callLlm')).map(outcome)).toEqual([{ attempt: 1, ok: true }]);
    expect(sink.deliveries).toHaveLength(1);
  });

  test('a 429 for an exhausted quota is permanent: the agent parks in failed after one call', async () => {
    fake.setFaultPolicy(() => ({ kind: 'status', status: 429, body: { error: { message: 'You exceeded your current quota.', type: 'insufficient_quota', code: 'insufficient_quota' } } }));
    await spawn('broke', { tasks: ['t1'] });
    const failed = await viewWhen('broke', isFailed);
    expect(contextOf(failed).lastError).toMatchObject({ kind: 'permanent', step: 'llm', status: 429 });
    expect(fake.calls).toHaveLength(1);
  });

  test('maxAttempts 503s in a row park the agent in failed as transient, after exactly maxAttempts calls', async () => {
    fake.setFaultPolicy(() => ({ kind: 'status', status: 503 }));
    await spawn('down', { tasks: ['t1'], webhook: sink.url });
    const view = await viewWhen('down', isFailed);

    expect(view.status).toBe('active');
    expect(contextOf(view).lastError).toMatchObject({ kind: 'transient', step: 'llm', status: 503, attempts: MAX_ATTEMPTS });
    expect(fake.calls).toHaveLength(MAX_ATTEMPTS);
    expect((await actions('down', 'callLlm')).map((r) => outcome(r).ok)).toEqual([false, false, false]);
    expect(sink.deliveries).toEqual([]);
  });
});

describe('permanent LLM failures', () => {
  test('401 fails at once after exactly one call; retry once the API is fixed completes the task', async () => {
    fake.setFaultPolicy(() => ({ kind: 'status', status: 401 }));
    await spawn('locked', { tasks: ['t1'], webhook: sink.url });
    const failed = await viewWhen('locked', isFailed);

    expect(contextOf(failed).lastError).toMatchObject({ kind: 'permanent', step: 'llm', status: 401, code: 'llm_rejected', attempts: 1 });
    expect(fake.calls).toHaveLength(1);

    fake.setFaultPolicy(undefined);
    await runtime.send('locked', { type: 'retry' });
    const done = await viewWhen('locked', idleAfter(1));
    expect(fake.calls).toHaveLength(2);
    expect(contextOf(done).lastError).toBeNull();
    expect(sink.deliveries.map((d) => d.idempotencyKey)).toEqual(['locked:1']);
  });

  test('a malformed answer (no message content) is permanent', async () => {
    fake.enqueueFaults({ kind: 'malformed' });
    await spawn('garbled', { tasks: ['t1'], webhook: sink.url });
    const view = await viewWhen('garbled', isFailed);

    expect(contextOf(view).lastError).toMatchObject({ kind: 'permanent', step: 'llm', code: 'malformed_llm_answer', attempts: 1 });
    expect(fake.calls).toHaveLength(1);
    expect(sink.deliveries).toEqual([]);
  });

  test('task.skip drops the failed task and the agent moves on to the next queued one', async () => {
    fake.setFaultPolicy((call) => (call.userContent === 'doomed' ? { kind: 'status', status: 400 } : undefined));
    await spawn('skipper', { tasks: ['doomed', 'fine'], webhook: sink.url });
    await viewWhen('skipper', isFailed);

    await runtime.send('skipper', { type: 'task.skip' });
    const view = await viewWhen('skipper', idleAfter(1));
    expect(contextOf(view)).toMatchObject({ skipped: 1, taken: 2, queue: [] });
    expect(fake.callsFor('doomed')).toHaveLength(1);
    expect(sink.deliveries).toHaveLength(1);
    expect(sink.deliveries[0]!.idempotencyKey).toBe('skipper:2');
    expect(sink.deliveries[0]!.body).toEqual({ agentId: 'skipper', seq: 2, task: 'fine', response: 'answer: fine' });
  });
});

describe('webhook failures', () => {
  test('500 then 200: delivered twice with the same key and the same body', async () => {
    sink.enqueueStatuses(500);
    await spawn('hook-flaky', { tasks: ['t1'], webhook: sink.url });
    await viewWhen('hook-flaky', idleAfter(1));

    expect(sink.deliveries.map((d) => d.status)).toEqual([500, 200]);
    expect(sink.deliveries[1]!.idempotencyKey).toBe('hook-flaky:1');
    expect(sink.deliveries[0]!.idempotencyKey).toBe(sink.deliveries[1]!.idempotencyKey);
    expect(sink.deliveries[0]!.rawBody).toBe(sink.deliveries[1]!.rawBody);
    expect(fake.calls).toHaveLength(1);
    expect((await actions('hook-flaky', 'runSideEffect')).map(outcome)).toEqual([
      { attempt: 1, ok: false, kind: 'transient', status: 500, code: 'webhook_rejected' },
      { attempt: 2, ok: true },
    ]);
  });

  test('400 fails at the effect step; retry delivers the same body again without calling the LLM', async () => {
    sink.enqueueStatuses(400);
    await spawn('hook-rejects', { tasks: ['t1'], webhook: sink.url });
    const failed = await viewWhen('hook-rejects', isFailed);

    expect(contextOf(failed).lastError).toMatchObject({ kind: 'permanent', step: 'effect', status: 400, attempts: 1 });
    expect(contextOf(failed).answer).toBe('answer: t1');
    expect(failed.progress).toBe(0);
    expect(sink.deliveries).toHaveLength(1);

    await runtime.send('hook-rejects', { type: 'retry' });
    await viewWhen('hook-rejects', idleAfter(1));
    expect(fake.calls).toHaveLength(1);
    expect(sink.deliveries.map((d) => [d.status, d.idempotencyKey])).toEqual([
      [400, 'hook-rejects:1'],
      [200, 'hook-rejects:1'],
    ]);
    expect(sink.deliveries[1]!.rawBody).toBe(sink.deliveries[0]!.rawBody);
  });

  test('maxAttempts 503s from the webhook park the agent in failed at the effect step, as transient', async () => {
    sink.enqueueStatuses(503, 503, 503);
    await spawn('hook-down', { tasks: ['t1'], webhook: sink.url });
    const view = await viewWhen('hook-down', isFailed);

    expect(contextOf(view).lastError).toMatchObject({ kind: 'transient', step: 'effect', status: 503, attempts: MAX_ATTEMPTS });
    expect(sink.deliveries).toHaveLength(MAX_ATTEMPTS);
    expect(new Set(sink.deliveries.map((d) => d.idempotencyKey))).toEqual(new Set(['hook-down:1']));
  });
});

describe('network failures', () => {
  test('an LLM API that cannot be reached is transient: retried, then failed after maxAttempts', async () => {
    await fake.close();
    await spawn('offline', { tasks: ['t1'], webhook: sink.url });
    const view = await viewWhen('offline', isFailed);

    expect(contextOf(view).lastError).toMatchObject({ kind: 'transient', step: 'llm', code: 'llm_unreachable', attempts: MAX_ATTEMPTS });
    expect((await actions('offline', 'callLlm')).map(outcome)).toEqual(
      [1, 2, 3].map((attempt) => ({ attempt, ok: false, kind: 'transient', status: undefined, code: 'llm_unreachable' })),
    );
    expect(sink.deliveries).toEqual([]);
  });

  test('a webhook that cannot be reached is transient: retried, then failed at the effect step', async () => {
    await sink.close();
    await spawn('hook-offline', { tasks: ['t1'], webhook: sink.url });
    const view = await viewWhen('hook-offline', isFailed);

    expect(contextOf(view).lastError).toMatchObject({ kind: 'transient', step: 'effect', code: 'webhook_unreachable', attempts: MAX_ATTEMPTS });
    expect(fake.calls).toHaveLength(1);
  });

  test('a webhook that does not answer within the timeout is transient and retried with the same key', async () => {
    sink.setLatency(5_000);
    await spawn('hook-slow', { tasks: ['t1'], webhook: sink.url }, { serverTimeout: true });
    const view = await viewWhen('hook-slow', isFailed);

    expect(contextOf(view).lastError).toMatchObject({ kind: 'transient', step: 'effect', code: 'webhook_timeout', attempts: MAX_ATTEMPTS });
    expect(sink.deliveries.map((d) => d.idempotencyKey)).toEqual(['hook-slow:1', 'hook-slow:1', 'hook-slow:1']);
  });
});
