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
