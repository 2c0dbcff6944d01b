// OpenTelemetry spans: the runtime's (from the observer) and HTTP's (from the middleware), checked
// with an in-memory exporter; then `main()` end to end: spans reach an OTLP/HTTP receiver only
// when the OTEL_* variables ask for them.
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Hono } from 'hono';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/service/config.js';
import { httpTracing } from '../../src/http/middleware/tracing.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import { main } from '../../src/service/main.js';
import { silentLogger } from '../../src/core/logger.js';
import { tracesExporters, tracingFromEnv } from '../../src/observability/otel.js';
import { createTracingObserver } from '../../src/observability/tracing.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { createServer } from '../../src/http/app.js';
import { isIdleWithProgress, runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { tempDbFile } from '../helpers/temp.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
// Registered after the hook above, so it runs before it (vitest runs after-hooks as a stack): the
// runtimes are closed before the servers they talk to.
const startRuntime = runtimesClosedAfterEach();

function inMemoryTracer() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { tracer: provider.getTracer('test'), spans: () => exporter.getFinishedSpans() };
}

async function agentRun(observer: Parameters<typeof createTracingObserver>[0]): Promise<{ runtime: Runtime; fake: FakeOpenAI; sink: WebhookSink }> {
  const fake = await startFakeOpenAI();
  const sink = await startWebhookSink();
  cleanups.push(() => fake.close(), () => sink.close());
  const { runtime } = await startRuntime({
    llm: createOpenAiClient({ baseURL: fake.url }),
    defaults: { baseDelayMs: 1, model: 'gpt-test' },
    observer: createTracingObserver(observer),
  });
  return { runtime, fake, sink };
}

const ms = ([s, ns]: [number, number]) => s * 1000 + ns / 1e6;
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe('runtime spans', () => {
  it('one trace per transition; the LLM call or effect that caused it is its child; agent.id and agent.seq on each', async () => {
    const { tracer, spans } = inMemoryTracer();
    const { runtime, fake, sink } = await agentRun(tracer);
    fake.enqueueFaults({ kind: 'status', status: 500 });
    await runtime.spawn('agent', { id: 'a1', input: { tasks: ['t1'], webhook: sink.url } });
    await waitForView(runtime, 'a1', isIdleWithProgress(1));

    const transitions = spans().filter((s) => s.name === 'agent.transition');
    expect(transitions.map((s) => [s.attributes['agent.seq'], s.attributes['xstate.event.type'], s.attributes['xstate.state']])).toEqual([
      [1, 'xstate.init', 'callingLLM.requesting'],
      [2, 'xstate.error.actor.llm', 'callingLLM.backingOff'],
      [3, 'xstate.done.actor.llmBackoff', 'callingLLM.requesting'],
      [4, 'xstate.done.actor.llm', 'persisted'],
      [5, 'runtime.committed', 'sideEffect.requesting'],
      [6, 'xstate.done.actor.effect', 'idle'],
    ]);
    for (const span of transitions) {
      expect(span.attributes['agent.id']).toBe('a1');
      expect(parentOf(span)).toBeUndefined(); // each transition is the root of its own trace
    }
    const bySeq = new Map(transitions.map((s) => [s.attributes['agent.seq'], s]));

    const llm = spans().filter((s) => s.name === 'agent.llm_call');
    expect(llm.map((s) => [s.attributes['agent.seq'], s.attributes['agent.attempt'], s.attributes['agent.outcome'], s.status.code])).toEqual([
      [2, 1, 'transient', SpanStatusCode.ERROR],
      [4, 2, 'ok', SpanStatusCode.UNSET],
    ]);
    for (const call of llm) {
      const transition = bySeq.get(call.attributes['agent.seq'])!;
      expect(parentOf(call)).toBe(transition.spanContext().spanId);
      expect(call.spanContext().traceId).toBe(transition.spanContext().traceId);
      expect(call.kind).toBe(SpanKind.CLIENT);
      expect(call.attributes).toMatchObject({ 'agent.id': 'a1', 'agent.action': 'callLlm', 'gen_ai.request.model': 'gpt-test' });
      // The call starts its transition's span and ends before the commit does.
      expect(ms(call.startTime)).toBe(ms(transition.startTime));
      expect(ms(call.endTime)).toBeLessThanOrEqual(ms(transition.endTime));
    }
    expect(llm[0]!.attributes).toMatchObject({ 'error.type': 'llm_unavailable', 'http.response.status_code': 500 });

    const [effect, ...more] = spans().filter((s) => s.name === 'agent.effect');
    expect(more).toEqual([]);
    expect(parentOf(effect!)).toBe(bySeq.get(6)!.spanContext().spanId);
    expect(effect!.attributes).toMatchObject({
      'agent.id': 'a1',
      'agent.seq': 6,
      'agent.outcome': 'ok',
      'agent.idempotency_key': 'a1:1',
      'http.response.status_code': 200,
    });
    // Transitions with no logged call (init, the backoff timer, the commit barrier) have no child.
    const parents = new Set(spans().map(parentOf).filter(Boolean));
    for (const seq of [1, 3, 5]) expect(parents.has(bySeq.get(seq)!.spanContext().spanId)).toBe(false);
  });
});

describe('HTTP spans', () => {
  it('one SERVER span per request, named by route, with agent.id / agent.seq, continuing a caller traceparent', async () => {
    const { tracer, spans } = inMemoryTracer();
    const { runtime } = await agentRun(inMemoryTracer().tracer);
    // The API app mounted behind the middleware, as server.ts will do with `app.use(httpTracing())`.
    const app = new Hono();
    app.use(httpTracing(tracer));
    app.route('/', createServer({ runtime }));

    const spawned = await app.request('/agents', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ machine: 'agent', id: 'h1' }),
    });
    expect(spawned.status).toBe(201);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    await app.request('/agents/h1', { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    await app.request('/agents/h1/checkpoints/1');
    expect((await app.request('/agents/nobody')).status).toBe(404);

    const [spawn, get, checkpoint, missing] = spans();
    expect(spawn!.name).toBe('POST /agents');
    expect(spawn!.kind).toBe(SpanKind.SERVER);
    expect(spawn!.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/agents', 'http.response.status_code': 201 });
    expect(get!.name).toBe('GET /agents/:id');
    expect(get!.attributes).toMatchObject({ 'agent.id': 'h1', 'url.path': '/agents/h1', 'http.response.status_code': 200 });
    expect(get!.spanContext().traceId).toBe(traceId);
    expect(get!.parentSpanContext).toMatchObject({ spanId: '00f067aa0ba902b7', isRemote: true });
    expect(parentOf(spawn!)).toBeUndefined();
    expect(checkpoint!.name).toBe('GET /agents/:id/checkpoints/:seq');
    expect(checkpoint!.attributes).toMatchObject({ 'agent.id': 'h1', 'agent.seq': 1 });
    expect(missing!.attributes['http.response.status_code']).toBe(404);
    expect(missing!.status.code).toBe(SpanStatusCode.UNSET); // a 4xx is the caller's error, not the server's
  });
});

describe('export only when OTEL_* asks', () => {
  it('reads the standard variables', () => {
    expect(tracesExporters({})).toEqual([]);
    expect(tracesExporters({ OTEL_SERVICE_NAME: 'svc', OTEL_EXPORTER_OTLP_HEADERS: 'a=b' })).toEqual([]);
    expect(tracesExporters({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual(['otlp']);
    expect(tracesExporters({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toEqual(['otlp']);
    expect(tracesExporters({ OTEL_TRACES_EXPORTER: 'console,otlp' })).toEqual(['console', 'otlp']);
    expect(tracesExporters({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual([]);
    expect(tracesExporters({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' })).toEqual([]);
    expect(tracingFromEnv({})).toBeUndefined();
    expect(tracingFromEnv({ OTEL_TRACES_EXPORTER: 'zipkin' })).toBeUndefined(); // not in this build: nothing rather than a guess
  });

  it('serve sends spans to the OTLP endpoint it is given, and nothing without the variables', async () => {
    const receiver = await startOtlpReceiver();
    cleanups.push(() => receiver.close());

    // No OTEL_* variable in the environment serve is given: no SDK is registered, nothing records,
    // so nothing is sent, even with the receiver's endpoint in this process's own environment.
    vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', receiver.url);
    try {
      await runServe({});
    } finally {
      vi.unstubAllEnvs();
    }
    expect(receiver.requests).toEqual([]);
    expect(trace.getTracer('probe').startSpan('probe').isRecording()).toBe(false);

    // Asked off explicitly, even with an endpoint.
    await runServe({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
    await runServe({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
    expect(receiver.requests).toEqual([]);

    // Asked for: the spans arrive (flushed at shutdown), under the service name.
    await runServe({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'agents-under-test' });
    expect(receiver.requests.map((r) => r.path)).toContain('/v1/traces');
    const spans = receiver.spans();
    expect(spans.filter((s) => s.name === 'agent.transition').length).toBeGreaterThanOrEqual(4);
    expect(spans.filter((s) => s.name === 'agent.llm_call')).toHaveLength(1);
    expect(spans.find((s) => s.name === 'agent.llm_call')!.attributes['agent.id']).toBe('otel-1');
    expect(receiver.serviceNames()).toEqual(['agents-under-test']);
    expect(trace.getTracer('probe').startSpan('probe').isRecording()).toBe(false); // unregistered at close
  });
});

describe('a collector that is down', () => {
  it('does not fail the shutdown', async () => {
    const receiver = await startOtlpReceiver();
    await receiver.close(); // nothing listens there any more
    await expect(runServe({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })).resolves.toBeUndefined();
  });
});

/** `durable-agents serve` in-process with the given environment: one agent, one task, then shutdown. */
async function runServe(env: NodeJS.ProcessEnv): Promise<void> {
  const service = await main(loadConfig(['--port', '0', '--db', tempDbFile(), '--passivate-after-ms', '0'], {}), silentLogger, env);
  try {
    const res = await fetch(`${service.url}/agents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ machine: 'agent', id: 'otel-1', input: { tasks: ['t1'] } }),
    });
    expect(res.status).toBe(201);
    await waitForView(service.runtime, 'otel-1', isIdleWithProgress(1));
  } finally {
    await service.close();
  }
}

interface OtlpSpan {
  name: string;
  attributes: Record<string, unknown>;
}

/** An OTLP/HTTP JSON receiver: records each POST and decodes the spans in it. */
async function startOtlpReceiver() {
  const requests: { path: string; body: any }[] = [];
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const value = (v: any): unknown => v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : v?.boolValue ?? v?.doubleValue);
  const resourceSpans = () => requests.flatMap((r) => (r.body?.resourceSpans ?? []) as any[]);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    spans: (): OtlpSpan[] =>
      resourceSpans().flatMap((rs) =>
        (rs.scopeSpans as any[]).flatMap((ss) =>
          (ss.spans as any[]).map((s) => ({
            name: s.name as string,
            attributes: Object.fromEntries((s.attributes as any[]).map((a) => [a.key, value(a.value)])),
          })),
        ),
      ),
    serviceNames: () => [
      ...new Set(resourceSpans().map((rs) => value((rs.resource.attributes as any[]).find((a) => a.key === 'service.name')?.value))),
    ],
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
