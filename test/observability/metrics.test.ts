// /metrics after real runs: the runtime on a temp SQLite file, the real `openai` client against the
// fake OpenAI server (one 500, then an answer), the webhook to a local sink, all through HTTP.
import { afterEach, describe, expect, it } from 'vitest';
import { createMachine } from 'xstate';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import { createMetrics, type Metrics } from '../../src/observability/metrics.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { createServer } from '../../src/http/app.js';
import { isIdleWithProgress, runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { postJson } from '../http/harness.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';
import { parsePrometheus, sumOf, valueOf, type Sample } from './prom-text.js';

/** A machine whose action throws: the agent fails inside its chart ("actor" failure). */
const boomDefinition = {
  name: 'boom',
  machine: createMachine({
    id: 'boom',
    initial: 'armed',
    states: {
      armed: {
        on: {
          explode: {
            actions: () => {
              throw new Error('kaboom');
            },
          },
        },
      },
    },
  }),
};

let fake: FakeOpenAI;
let sink: WebhookSink;
let runtime: Runtime | undefined;

afterEach(async () => {
  runtime = undefined;
  await fake?.close();
  await sink?.close();
});
// Registered after the hook above, so it runs before it (vitest runs after-hooks as a stack): the
// runtime is closed before the servers it talks to.
const startRuntime = runtimesClosedAfterEach();

async function start(): Promise<{ app: ReturnType<typeof createServer>; metrics: Metrics }> {
  fake = await startFakeOpenAI();
  sink = await startWebhookSink();
  const metrics = createMetrics();
  const t = await startRuntime({
    machines: [
      agentDefinition({ llm: createOpenAiClient({ baseURL: fake.url }), defaults: { baseDelayMs: 1, maxAttempts: 3 } }),
      boomDefinition,
    ],
    observer: metrics.observer,
  });
  runtime = t.runtime;
  return { app: createServer({ runtime: t.runtime, metrics }), metrics };
}

async function scrape(app: ReturnType<typeof createServer>): Promise<Sample[]> {
  const res = await app.request('/metrics');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return parsePrometheus(await res.text());
}

describe('GET /metrics after a run', () => {
  it('counts transitions, LLM calls by outcome, the retry, the effect, commits and action-log rows', async () => {
    const { app } = await start();
    fake.enqueueFaults({ kind: 'status', status: 500 });
    const spawned = await postJson(app, '/agents', { machine: 'agent', id: 'a1', input: { tasks: ['t1'], webhook: sink.url } });
    expect(spawned.status).toBe(201);
    await waitForView(runtime!, 'a1', isIdleWithProgress(1));
    expect(fake.calls.map((c) => c.outcome)).toEqual(['fault', 'ok']);
    expect(sink.deliveries).toHaveLength(1);

    const m = await scrape(app);
    // LLM: one transient failure (the 500), retried once, then one success.
    expect(valueOf(m, 'durable_agents_llm_calls_total', { outcome: 'transient' })).toBe(1);
    expect(valueOf(m, 'durable_agents_llm_calls_total', { outcome: 'ok' })).toBe(1);
    expect(valueOf(m, 'durable_agents_llm_calls_total', { outcome: 'permanent' })).toBe(0);
    expect(valueOf(m, 'durable_agents_llm_call_duration_seconds_count', { outcome: 'transient' })).toBe(1);
    expect(valueOf(m, 'durable_agents_llm_call_duration_seconds_count', { outcome: 'ok' })).toBe(1);
    expect(valueOf(m, 'durable_agents_llm_call_duration_seconds_bucket', { outcome: 'ok', le: '+Inf' })).toBe(1);
    expect(valueOf(m, 'durable_agents_retries_total', { action: 'callLlm' })).toBe(1);
    expect(valueOf(m, 'durable_agents_retries_total', { action: 'runSideEffect' })).toBe(0);
    // The webhook, once.
    expect(valueOf(m, 'durable_agents_effects_total', { outcome: 'ok' })).toBe(1);
    expect(sumOf(m, 'durable_agents_effects_total')).toBe(1);
    expect(valueOf(m, 'durable_agents_effect_duration_seconds_count', { outcome: 'ok' })).toBe(1);

    // Every committed transition, by event and the top-level state it led to.
    const transitions = m
      .filter((s) => s.name === 'durable_agents_transitions_total')
      .map((s) => `${s.labels.machine} ${s.labels.event} -> ${s.labels.state} x${s.value}`)
      .sort();
    expect(transitions).toEqual([
      'agent runtime.committed -> sideEffect x1',
      'agent xstate.done.actor.effect -> idle x1',
      'agent xstate.done.actor.llm -> persisted x1',
      'agent xstate.done.actor.llmBackoff -> callingLLM x1',
      'agent xstate.error.actor.llm -> callingLLM x1',
      'agent xstate.init -> callingLLM x1',
    ]);
    const checkpoints = (await (await app.request('/agents/a1/checkpoints')).json()) as { items: unknown[] };
    expect(checkpoints.items).toHaveLength(6);
    expect(valueOf(m, 'durable_agents_checkpoint_latency_seconds_count')).toBe(6);

    // Group commits: 6 checkpoints + 1 effect record, in however many transactions.
    expect(valueOf(m, 'durable_agents_checkpoint_commit_batch_size_sum')).toBe(7);
    const commits = valueOf(m, 'durable_agents_checkpoint_commit_seconds_count');
    expect(commits).toBeGreaterThanOrEqual(1);
    expect(valueOf(m, 'durable_agents_checkpoint_commit_batch_size_count')).toBe(commits);

    // Action log growth matches the log itself.
    const actions = (await (await app.request('/agents/a1/actions')).json()) as { items: { action: string }[] };
    expect(actions.items.map((a) => a.action)).toEqual(['callLlm', 'callLlm', 'runSideEffect']);
    expect(valueOf(m, 'durable_agents_action_log_rows_total', { machine: 'agent', action: 'callLlm' })).toBe(2);
    expect(valueOf(m, 'durable_agents_action_log_rows_total', { machine: 'agent', action: 'runSideEffect' })).toBe(1);

    // Gauges read at the scrape.
    expect(valueOf(m, 'durable_agents_agents', { status: 'active' })).toBe(1);
    expect(valueOf(m, 'durable_agents_live_agents')).toBe(1);
    expect(valueOf(m, 'durable_agents_live_agents_by_state', { state: 'idle' })).toBe(1);
    expect(valueOf(m, 'durable_agents_inbox_depth')).toBe(0);
    expect(sumOf(m, 'durable_agents_agent_failures_total')).toBe(0);

    // HTTP and the default process metrics.
    expect(valueOf(m, 'durable_agents_http_requests_total', { method: 'POST', route: '/agents', status: '201' })).toBe(1);
    expect(valueOf(m, 'durable_agents_agents_spawned_total', { machine: 'agent' })).toBe(1);
    expect(valueOf(m, 'durable_agents_process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(valueOf(m, 'durable_agents_nodejs_heap_size_total_bytes')).toBeGreaterThan(0);
  });

  it('live agents by state follow the agents, and failures are counted by reason', async () => {
    const { app } = await start();
    fake.setLatency(1_000); // the call is still in flight at the first scrape, even on a loaded machine
    await postJson(app, '/agents', { machine: 'agent', id: 'slow', input: { tasks: ['t1'] } });
    await postJson(app, '/agents', { machine: 'boom', id: 'b1' });
    let m = await scrape(app);
    expect(valueOf(m, 'durable_agents_live_agents_by_state', { state: 'callingLLM' })).toBe(1);
    expect(valueOf(m, 'durable_agents_live_agents_by_state', { state: 'armed' })).toBe(1);

    expect((await postJson(app, '/agents/b1/events', { type: 'explode' })).status).toBe(202);
    await waitForView(runtime!, 'b1', (v) => v.status === 'error');
    await waitForView(runtime!, 'slow', isIdleWithProgress(1));
    m = await scrape(app);
    expect(valueOf(m, 'durable_agents_agent_failures_total', { reason: 'actor' })).toBe(1);
    expect(valueOf(m, 'durable_agents_agent_failures_total', { reason: 'corrupt' })).toBe(0);
    expect(valueOf(m, 'durable_agents_agents', { status: 'error' })).toBe(1);
    // A state no agent is in any more reads 0 rather than its last count.
    expect(valueOf(m, 'durable_agents_live_agents_by_state', { state: 'callingLLM' })).toBe(0);
    expect(valueOf(m, 'durable_agents_live_agents_by_state', { state: 'armed' })).toBe(0);
    expect(valueOf(m, 'durable_agents_live_agents_by_state', { state: 'idle' })).toBe(1);
    expect(valueOf(m, 'durable_agents_events_accepted_total', { type: 'explode' })).toBe(1);
  });
});
