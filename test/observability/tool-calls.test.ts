// Token usage and tool calls in /metrics and traces, from real runs: the reference agent through the
// real `openai` client against the fake server (scripted tool calls and usage), its HTTP tools on a
// local tool server, a real SQLite file; spans checked with an in-memory exporter.
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import { combineObservers } from '../../src/observability/combine-observers.js';
import { createMetrics, type Metrics } from '../../src/observability/metrics.js';
import { createTracingObserver, SPAN } from '../../src/observability/tracing.js';
import type { RuntimeObserver } from '../../src/runtime/observer.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { tempDbFile } from '../helpers/temp.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { startToolServer, type ToolServer } from '../support/tool-server.js';
import { parsePrometheus, valueOf, type Sample } from './prom-text.js';

let fake: FakeOpenAI | undefined;
let tools: ToolServer | undefined;
afterEach(async () => {
  await fake?.close();
  await tools?.close();
  fake = tools = undefined;
});
// Registered after the hook above, so it runs before it: the runtimes close before the servers they call.
const startRuntime = runtimesClosedAfterEach();

const usage = (prompt: number, completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion });
const idleAfter = (n: number) => (view: { state: unknown; progress: number }) => view.state === 'idle' && view.progress === n;
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

/** The reference agent on a SQLite file, observed by `observers(store)` (given the store, as `serve` gives it). */
async function start(observers: (store: Awaited<ReturnType<typeof openSqliteStore>>) => RuntimeObserver) {
  fake = await startFakeOpenAI();
  tools = await startToolServer();
  const store = await openSqliteStore(tempDbFile());
  const llm = createOpenAiClient({ baseURL: fake.url });
  const { runtime } = await startRuntime({
    store,
    machines: [agentDefinition({ llm, defaults: { baseDelayMs: 1, maxAttempts: 3, model: 'gpt-test' } })],
    observer: observers(store),
  });
  return { runtime, fake, tools };
}

function inMemoryTracer() {
  const exporter = new InMemorySpanExporter();
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('test');
  return { tracer, spans: () => exporter.getFinishedSpans() };
}

const scrape = async (metrics: Metrics): Promise<Sample[]> => parsePrometheus(await metrics.render());
const toolCalls = (samples: Sample[], tool: string, outcome: string) => valueOf(samples, 'durable_agents_tool_calls_total', { machine: 'agent', tool, outcome });

describe('LLM tokens and tool calls, through the openai client', () => {
  it('count exact tokens by model and kind, and each tool call by tool and outcome; a call to a tool never offered is "(unknown)"', async () => {
    const metrics = createMetrics();
    const { runtime, fake, tools } = await start(() => metrics.observer);
    const before = await scrape(metrics);
    fake.script(
      { toolCalls: [{ id: 'c1', name: 'weather', arguments: { city: 'Oslo' } }, { id: 'c2', name: 'made_up', arguments: {} }], usage: usage(20, 5) },
      { content: 'It is 3 °C in Oslo.', usage: usage(40, 8) },
      { content: 'No usage from this provider.', usage: null },
    );
    tools.respond('weather', { kind: 'json', body: { celsius: 3 } });
    await runtime.spawn('agent', { id: 'w1', input: { tasks: ['Weather in Oslo?', 'And now?'], tools: [{ name: 'weather', url: tools.url('weather') }] } });
    await waitForView(runtime, 'w1', idleAfter(2));
    const after = await scrape(metrics);

    // The tools actor's retries start at 0 with the other declared actors'; tokens and tools once a call names them.
    expect(valueOf(before, 'durable_agents_retries_total', { action: 'runTools' })).toBe(0);
    expect(before.filter((s) => s.name === 'durable_agents_llm_tokens_total' || s.name === 'durable_agents_tool_calls_total')).toEqual([]);
    // 20 + 40 + 0 in, 5 + 8 + 0 out: the third answer had no usage and adds 0.
    expect(after.filter((s) => s.name === 'durable_agents_llm_tokens_total')).toEqual([
      { name: 'durable_agents_llm_tokens_total', labels: { machine: 'agent', model: 'gpt-test', kind: 'input' }, value: 60 },
      { name: 'durable_agents_llm_tokens_total', labels: { machine: 'agent', model: 'gpt-test', kind: 'output' }, value: 13 },
    ]);
    expect(toolCalls(after, 'weather', 'ok')).toBe(1);
    expect(toolCalls(after, 'weather', 'error')).toBe(0);
    expect(toolCalls(after, '(unknown)', 'error')).toBe(1);
    expect(toolCalls(after, '(unknown)', 'ok')).toBe(0);
    expect(after.filter((s) => s.name === 'durable_agents_tool_calls_total')).toHaveLength(4);
  });

  it('make one agent.tool_call child span per call under the transition the batch caused, and GenAI attributes on LLM spans', async () => {
    const { tracer, spans } = inMemoryTracer();
    const { runtime, fake, tools } = await start(() => createTracingObserver(tracer));
    fake.script(
      { toolCalls: [{ id: 'c1', name: 'weather', arguments: { city: 'Oslo' } }, { id: 'c2', name: 'weather', arguments: { city: 'Atlantis' } }], usage: usage(20, 5) },
      { content: 'Oslo is at 3 °C; Atlantis I could not find.', usage: usage(40, 8) },
    );
    tools.respond('weather', (d) =>
      (d.body?.arguments as { city: string }).city === 'Oslo' ? { kind: 'json', body: { celsius: 3 } } : { kind: 'status', status: 404, body: 'no such city' },
    );
    await runtime.spawn('agent', { id: 't1', input: { tasks: ['Weather?'], tools: [{ name: 'weather', url: tools.url('weather') }] } });
    await waitForView(runtime, 't1', idleAfter(1));
    const finished = spans();

    const llm = finished.filter((s) => s.name === SPAN.llmCall);
    expect(llm.map((s) => s.attributes)).toEqual([
      expect.objectContaining({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt-test', 'gen_ai.usage.input_tokens': 20, 'gen_ai.usage.output_tokens': 5 }),
      expect.objectContaining({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt-test', 'gen_ai.usage.input_tokens': 40, 'gen_ai.usage.output_tokens': 8 }),
    ]);

    const calls = finished.filter((s) => s.name === SPAN.toolCall);
    expect(calls.map((s) => s.attributes['gen_ai.tool.call.id'])).toEqual(['c1', 'c2']);
    const [oslo, atlantis] = calls as [ReadableSpan, ReadableSpan];
    const batch = finished.filter((s) => s.name === SPAN.transition && s.attributes['agent.action'] === 'runTools');
    expect(batch).toHaveLength(1);
    for (const span of calls) {
      expect(span.kind).toBe(SpanKind.CLIENT);
      expect(parentOf(span)).toBe(batch[0]!.spanContext().spanId);
      expect(span.spanContext().traceId).toBe(batch[0]!.spanContext().traceId);
    }
    // The key is the one the tool was called with.
    expect(tools.deliveries.map((d) => d.idempotencyKey)).toEqual(['t1:1:c1', 't1:1:c2']);
    expect(oslo.attributes).toEqual({
      'agent.id': 't1',
      'agent.seq': batch[0]!.attributes['agent.seq'],
      'agent.machine': 'agent',
      'agent.action': 'runTools',
      'agent.attempt': 1,
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'weather',
      'gen_ai.tool.call.id': 'c1',
      'agent.idempotency_key': 't1:1:c1',
      'agent.outcome': 'ok',
    });
    expect(oslo.status.code).toBe(SpanStatusCode.UNSET);
    expect(atlantis.attributes).toMatchObject({ 'gen_ai.tool.call.id': 'c2', 'agent.idempotency_key': 't1:1:c2', 'agent.outcome': 'error' });
    expect(atlantis.status.code).toBe(SpanStatusCode.ERROR);
    // The tools actor's call has no span of its own besides its calls; arguments and results appear nowhere.
    expect(finished.filter((s) => s.name === SPAN.action)).toEqual([]);
    const values = JSON.stringify(finished.map((s) => [s.attributes, s.status, s.events]));
    expect(values).not.toMatch(/Oslo|Atlantis|celsius|no such city/);
  });

  it('mark only the calls without a recorded result failed, with the error code, when a batch fails transiently', async () => {
    const { tracer, spans } = inMemoryTracer();
    let withStore: Metrics | undefined;
    const withoutStore = createMetrics();
    const { runtime, fake, tools } = await start((store) => {
      withStore = createMetrics({ effects: store });
      return combineObservers(withStore.observer, withoutStore.observer, createTracingObserver(tracer, { effects: store }));
    });
    tools.enqueue('flaky', { kind: 'status', status: 503 });
    tools.respond('steady', { kind: 'json', body: 'fine' });
    fake.script({ toolCalls: [{ id: 'f', name: 'flaky', arguments: {} }, { id: 's', name: 'steady', arguments: {} }] }, { content: 'Recovered.' });
    await runtime.spawn('agent', { id: 'r1', input: { tasks: ['Try'], tools: [{ name: 'flaky', url: tools.url('flaky') }, { name: 'steady', url: tools.url('steady') }] } });
    await waitForView(runtime, 'r1', idleAfter(1));
    expect(tools.deliveriesFor('r1:1:f')).toHaveLength(2);
    expect(tools.deliveriesFor('r1:1:s')).toHaveLength(1);

    // Reported once the store has said which results were recorded: after the fact.
    const toolSpans = await vi.waitFor(() => {
      const found = spans().filter((s) => s.name === SPAN.toolCall);
      expect(found).toHaveLength(3);
      // Sorted: the failed attempt's spans wait for the store, so they may finish after the next attempt's.
      return found.sort((a, b) => Number(a.attributes['agent.attempt']) - Number(b.attributes['agent.attempt']) || String(a.attributes['gen_ai.tool.call.id']).localeCompare(String(b.attributes['gen_ai.tool.call.id'])));
    });
    expect(toolSpans.map((s) => [s.attributes['agent.attempt'], s.attributes['gen_ai.tool.call.id'], s.attributes['agent.outcome'], s.attributes['error.type']])).toEqual([
      [1, 'f', 'error', 'tool_unavailable'],
      [2, 'f', 'ok', undefined],
      [2, 's', 'ok', undefined],
    ]);
    expect(toolSpans[0]!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'tool_unavailable' });
    const failedBatch = spans().find((s) => s.spanContext().spanId === parentOf(toolSpans[0]!));
    expect(failedBatch?.attributes).toMatchObject({ 'agent.action': 'runTools', 'xstate.event.type': 'xstate.error.actor.tools' });

    const counted = await vi.waitFor(async () => {
      const samples = await scrape(withStore!);
      expect(toolCalls(samples, 'steady', 'ok')).toBe(1);
      return samples;
    });
    expect([toolCalls(counted, 'flaky', 'ok'), toolCalls(counted, 'flaky', 'error'), toolCalls(counted, 'steady', 'ok'), toolCalls(counted, 'steady', 'error')]).toEqual([1, 1, 1, 0]);
    expect(valueOf(counted, 'durable_agents_retries_total', { action: 'runTools' })).toBe(1);
    // Without the store to ask, every call of the failed batch counts as failed.
    const blind = await scrape(withoutStore);
    expect([toolCalls(blind, 'flaky', 'ok'), toolCalls(blind, 'flaky', 'error'), toolCalls(blind, 'steady', 'ok'), toolCalls(blind, 'steady', 'error')]).toEqual([1, 1, 1, 1]);
  });
});
