// Metrics and spans follow what a machine definition declares its actors to be, not their names:
// a user's own machine whose LLM call is named `askModel` gets the LLM metrics and spans, with no
// change to observability code; the same machine without declarations gets none.
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { assign, fromPromise, setup } from 'xstate';
import { describe, expect, it } from 'vitest';
import { currentAgent } from '../../src/durable/current-agent.js';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { combineObservers } from '../../src/observability/combine-observers.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { createTracingObserver, SPAN } from '../../src/observability/tracing.js';
import { runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { parsePrometheus, valueOf } from './prom-text.js';

const startRuntime = runtimesClosedAfterEach();

/** Asks a model, then tells someone the answer: the shape of an agent, with names of its own. */
const askerMachine = setup({
  types: { context: {} as { answer: string | null } },
  actors: {
    askModel: fromPromise<string, { model: string; question: string }>(async ({ input }) => `42 is the answer to ${input.question}`),
    tellSomeone: fromPromise<{ idempotencyKey: string }, { seq: number }>(async ({ input, system }) => ({
      idempotencyKey: `${currentAgent(system).agentId}/${input.seq}`,
    })),
  },
}).createMachine({
  id: 'asker',
  initial: 'asking',
  context: { answer: null },
  states: {
    asking: {
      invoke: {
        id: 'ask',
        src: 'askModel',
        input: { model: 'model-7', question: 'everything' },
        onDone: { target: 'telling', actions: assign({ answer: ({ event }) => event.output }) },
      },
    },
    telling: { invoke: { id: 'tell', src: 'tellSomeone', input: { seq: 1 }, onDone: 'told' } },
    told: { type: 'final' },
  },
});

const declared: MachineDefinition = {
  name: 'asker',
  machine: askerMachine,
  actors: { askModel: { kind: 'llm' }, tellSomeone: { kind: 'effect' } },
};
const undeclared: MachineDefinition = { name: 'plain-asker', machine: askerMachine };

/** Asks a model, which answers with a tool call and its usage, then runs the call: the tool loop's shape, with names of its own. */
const toolUserMachine = setup({
  actors: {
    askModel: fromPromise(async () => ({ content: null, toolCalls: [{ id: 'k1', name: 'lookup', arguments: '{}' }], usage: { promptTokens: 7, completionTokens: 3, totalTokens: 10 } })),
    useTools: fromPromise(async () => [{ callId: 'k1', name: 'lookup', ok: true, content: 'found' }]),
  },
}).createMachine({
  id: 'tool-user',
  initial: 'asking',
  states: {
    asking: { invoke: { id: 'ask', src: 'askModel', input: { model: 'model-7' }, onDone: 'using' } },
    using: { invoke: { id: 'use', src: 'useTools', input: { seq: 1, calls: [{ id: 'k1', name: 'lookup', arguments: '{}' }] }, onDone: 'used' } },
    used: { type: 'final' },
  },
});

async function run(definition: MachineDefinition) {
  const metrics = createMetrics();
  const exporter = new InMemorySpanExporter();
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('test');
  const { runtime } = await startRuntime({ machines: [definition], observer: combineObservers(metrics.observer, createTracingObserver(tracer)) });
  const before = parsePrometheus(await metrics.render());
  await runtime.spawn(definition.name, { id: 'q1' });
  await waitForView(runtime, 'q1', (view) => view.status === 'done');
  return { before, after: parsePrometheus(await metrics.render()), spans: exporter.getFinishedSpans() };
}

describe('actor kinds declared by a machine definition', () => {
  it("give a user machine's LLM actor the LLM metrics and span, and its effect actor the effect metrics and key", async () => {
    const { before, after, spans } = await run(declared);
    // Series exist before the first call, for the declared actors.
    expect(valueOf(before, 'durable_agents_retries_total', { action: 'askModel' })).toBe(0);
    expect(valueOf(before, 'durable_agents_retries_total', { action: 'tellSomeone' })).toBe(0);
    expect(valueOf(after, 'durable_agents_llm_calls_total', { outcome: 'ok' })).toBe(1);
    expect(valueOf(after, 'durable_agents_effects_total', { outcome: 'ok' })).toBe(1);
    expect(valueOf(after, 'durable_agents_llm_call_duration_seconds_count', { outcome: 'ok' })).toBe(1);

    const llm = spans.filter((s) => s.name === SPAN.llmCall);
    expect(llm).toHaveLength(1);
    expect(llm[0]!.attributes).toMatchObject({ 'agent.action': 'askModel', 'gen_ai.request.model': 'model-7', 'agent.outcome': 'ok' });
    const effect = spans.filter((s) => s.name === SPAN.effect);
    expect(effect).toHaveLength(1);
    expect(effect[0]!.attributes).toMatchObject({ 'agent.action': 'tellSomeone', 'agent.idempotency_key': 'q1/1' });
    expect(spans.filter((s) => s.name === SPAN.action)).toEqual([]);
  });

  it('leave the same actors plain calls when the definition declares nothing', async () => {
    const { after, spans } = await run(undeclared);
    expect(valueOf(after, 'durable_agents_llm_calls_total', { outcome: 'ok' })).toBe(0);
    expect(valueOf(after, 'durable_agents_effects_total', { outcome: 'ok' })).toBe(0);
    expect(after.filter((s) => s.name === 'durable_agents_retries_total')).toEqual([]);
    // Still logged and traced, as plain actions.
    expect(valueOf(after, 'durable_agents_action_log_rows_total', { machine: 'plain-asker', action: 'askModel' })).toBe(1);
    expect(spans.filter((s) => s.name === SPAN.action).map((s) => s.attributes['agent.action'])).toEqual(['askModel', 'tellSomeone']);
    expect(spans.filter((s) => s.name === SPAN.llmCall || s.name === SPAN.effect)).toEqual([]);
  });
});

describe('tokens and tool calls follow the declared kinds too', () => {
  const declaredTools: MachineDefinition = { name: 'tool-user', machine: toolUserMachine, actors: { askModel: { kind: 'llm' }, useTools: { kind: 'tools' } } };

  it("count a user machine's LLM tokens and tool calls, and trace each call, whatever its actors are called", async () => {
    const { before, after, spans } = await run(declaredTools);
    expect(valueOf(before, 'durable_agents_retries_total', { action: 'useTools' })).toBe(0);
    expect(valueOf(after, 'durable_agents_llm_tokens_total', { machine: 'tool-user', model: 'model-7', kind: 'input' })).toBe(7);
    expect(valueOf(after, 'durable_agents_llm_tokens_total', { machine: 'tool-user', model: 'model-7', kind: 'output' })).toBe(3);
    // An input that lists no offered tools: the names are taken as they are.
    expect(valueOf(after, 'durable_agents_tool_calls_total', { machine: 'tool-user', tool: 'lookup', outcome: 'ok' })).toBe(1);
    const calls = spans.filter((s) => s.name === SPAN.toolCall);
    expect(calls.map((s) => s.attributes)).toEqual([
      expect.objectContaining({ 'agent.action': 'useTools', 'gen_ai.tool.name': 'lookup', 'gen_ai.tool.call.id': 'k1', 'agent.idempotency_key': 'q1:1:k1', 'agent.outcome': 'ok' }),
    ]);
    expect(spans.find((s) => s.name === SPAN.llmCall)?.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 7, 'gen_ai.usage.output_tokens': 3 });
  });

  it('give none of it to the same actors undeclared', async () => {
    const { after, spans } = await run({ name: 'plain-tool-user', machine: toolUserMachine });
    expect(after.filter((s) => s.name === 'durable_agents_llm_tokens_total' || s.name === 'durable_agents_tool_calls_total')).toEqual([]);
    expect(spans.filter((s) => s.name === SPAN.action).map((s) => s.attributes['agent.action'])).toEqual(['askModel', 'useTools']);
    expect(spans.filter((s) => s.name === SPAN.toolCall || s.name === SPAN.llmCall)).toEqual([]);
    expect(spans.flatMap((s) => Object.keys(s.attributes)).filter((key) => key.startsWith('gen_ai.'))).toEqual([]);
  });
});
