// Budgets per agent (input `budget`, event `budget.raise`) with real parts: the runtime on a real
// SQLite file, the official `openai` client over HTTP to the fake Chat Completions server (its
// usage scripted per answer), restarts on the same file, and the Prometheus metrics.
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import type { LlmClient } from '../../src/llm/client.js';
import type { AgentContext, AgentDefaults, AgentInput } from '../../src/agents/reference/types.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { AgentView } from '../../src/runtime/views.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { tool } from '../../src/agents/reference/tools.js';
import { z } from 'zod';
import { runtimesClosedAfterEach } from '../helpers/runtime.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';

const PRICES: AgentDefaults['prices'] = { 'gpt-test': { inputPerMTok: 2, outputPerMTok: 10 } };
const DEFAULTS: Partial<AgentDefaults> = { model: 'gpt-test', maxAttempts: 2, baseDelayMs: 20, maxDelayMs: 200, timeoutMs: 10_000, prices: PRICES };

let fake: FakeOpenAI;
let llm: LlmClient;

afterEach(async () => {
  await fake?.close();
});
// Registered after the hook above, so it runs before it: the runtimes are closed before the fake.
const start = runtimesClosedAfterEach();

beforeEach(async () => {
  fake = await startFakeOpenAI();
  llm = createOpenAiClient({ baseURL: fake.url, apiKey: 'test' });
});

/** An answer whose usage is exactly this (total = prompt + completion). */
const answer = (content: string, prompt: number, completion: number) => ({ content, usage: { prompt_tokens: prompt, completion_tokens: completion } });

function viewWhen(runtime: Runtime, id: string, check: (view: AgentView, context: AgentContext) => void): Promise<AgentView> {
  return vi.waitFor(
    async () => {
      const view = await runtime.view(id);
      check(view, view.context as AgentContext);
      return view;
    },
    { timeout: 15_000, interval: 10 },
  );
}

const parkedOnBudget = (view: AgentView, context: AgentContext) => {
  expect(view.state).toBe('failed');
  expect(context.lastError?.code).toBe('budget_exceeded');
};
const idleAfter = (tasks: number) => (view: AgentView) => {
  expect(view.state).toBe('idle');
  expect(view.progress).toBe(tasks);
};

async function spawn(runtime: Runtime, id: string, input: AgentInput): Promise<void> {
  await runtime.spawn('agent', { id, input });
}

/** The agent's last committed checkpoint. */
const lastSeq = async (runtime: Runtime, id: string) => (await runtime.store.getAgent(id))!.lastSeq;

/** Nothing more happens for a while (no call, no checkpoint): what an agent parked for good does. */
async function settles(runtime: Runtime, id: string, calls: number): Promise<void> {
  const before = await lastSeq(runtime, id);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(fake.calls).toHaveLength(calls);
  expect(await lastSeq(runtime, id)).toBe(before);
}

describe('a budget in tokens', () => {
  test('exceeded: the agent parks in failed (budget_exceeded) with no further LLM call; budget.raise finishes its tasks', async () => {
    const { runtime } = await start({ llm, defaults: DEFAULTS });
    fake.script(answer('first', 70, 50), answer('second', 10, 5));
    await spawn(runtime, 'b1', { tasks: ['one', 'two'], budget: { maxTotalTokens: 100 } });

    const parked = await viewWhen(runtime, 'b1', parkedOnBudget);
    const context = parked.context as AgentContext;
    expect(context.spent).toEqual({ totalTokens: 120, costUsd: 0.00064 }); // 70 × $2 + 50 × $10 per million
    expect(context.usage.totalTokens).toBe(120);
    expect(context.current?.task).toBe('two');
    expect(context.lastError).toMatchObject({ kind: 'permanent', step: 'llm', attempts: 0, message: expect.stringContaining('120 tokens of its 100 (maxTotalTokens)') });
    expect(parked.progress).toBe(1);
    await settles(runtime, 'b1', 1);
    // The call it did not make is not in the action log either.
    expect((await runtime.store.listActions('b1')).filter((a) => a.action === 'callLlm')).toHaveLength(1);

    await runtime.send('b1', { type: 'budget.raise', maxTotalTokens: 1000 });
    const done = await viewWhen(runtime, 'b1', idleAfter(2));
    expect(fake.calls).toHaveLength(2);
    expect(fake.calls[1]!.userContent).toBe('two');
    expect((done.context as AgentContext).budget).toEqual({ maxTotalTokens: 1000, price: PRICES['gpt-test'] });
    expect((done.context as AgentContext).spent).toEqual({ totalTokens: 135, costUsd: 0.00071 });
    expect((done.context as AgentContext).lastError).toBeNull();
  });

  test('retry without a raise: still over, parked again, still no call', async () => {
    const { runtime } = await start({ llm, defaults: DEFAULTS });
    fake.script(answer('first', 90, 20));
    await spawn(runtime, 'b2', { tasks: ['one', 'two'], budget: { maxTotalTokens: 100 } });
    await viewWhen(runtime, 'b2', parkedOnBudget);
    const before = await lastSeq(runtime, 'b2');
    await runtime.send('b2', { type: 'retry' });
    await vi.waitFor(async () => expect(await lastSeq(runtime, 'b2')).toBeGreaterThan(before));
    parkedOnBudget(await runtime.view('b2'), (await runtime.view('b2')).context as AgentContext);
    await settles(runtime, 'b2', 1);
  });

  test('a follow-up turn after tool results is checked before its call', async () => {
    const lookup = tool({ name: 'lookup', parameters: z.object({}), execute: () => ({ found: 'it' }) });
    const { runtime } = await start({ machines: [agentDefinition({ llm, defaults: DEFAULTS, tools: [lookup] })] });
    fake.script({ toolCalls: [{ name: 'lookup', arguments: {} }], usage: { prompt_tokens: 40, completion_tokens: 20 } }, answer('done', 5, 5));
    await spawn(runtime, 'b3', { tasks: ['look it up'], budget: { maxTotalTokens: 50 } });
    const parked = await viewWhen(runtime, 'b3', parkedOnBudget);
    expect((parked.context as AgentContext).turn).toBe(1);
    expect((parked.context as AgentContext).messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    await settles(runtime, 'b3', 1);
    await runtime.send('b3', { type: 'budget.raise', maxTotalTokens: 200 });
    await viewWhen(runtime, 'b3', idleAfter(1));
    expect(fake.calls).toHaveLength(2);
  });
});

describe('a budget in dollars', () => {
  test("counted at the model's price; exceeded, then raised", async () => {
    const { runtime } = await start({ llm, defaults: DEFAULTS });
    fake.script(answer('first', 1000, 1000), answer('second', 1000, 1000));
    await spawn(runtime, 'c1', { tasks: ['one', 'two'], budget: { maxCostUsd: 0.01 } });
    const parked = await viewWhen(runtime, 'c1', parkedOnBudget);
    expect((parked.context as AgentContext).spent).toEqual({ totalTokens: 2000, costUsd: 0.012 });
    expect((parked.context as AgentContext).lastError?.message).toContain('$0.012 of its $0.01 (maxCostUsd)');
    await runtime.send('c1', { type: 'budget.raise', maxCostUsd: 0.05 });
    const done = await viewWhen(runtime, 'c1', idleAfter(2));
    expect((done.context as AgentContext).spent).toEqual({ totalTokens: 4000, costUsd: 0.024 });
  });

  test('refused at spawn for a model with no price', async () => {
    const { runtime } = await start({ llm, defaults: DEFAULTS });
    await expect(spawn(runtime, 'c2', { model: 'unpriced', tasks: ['one'], budget: { maxCostUsd: 1 } })).rejects.toThrow(/no price is known for the model "unpriced"/);
    await expect(runtime.view('c2')).rejects.toThrow();
    expect(fake.calls).toHaveLength(0);
  });
});

describe('across a restart', () => {
  test('parked on its budget, the runtime closed and reopened on the same file: still parked, no call; raised, it finishes', async () => {
    const first = await start({ llm, defaults: DEFAULTS });
    fake.script(answer('first', 100, 20), answer('second', 10, 10));
    await spawn(first.runtime, 'r1', { tasks: ['one', 'two'], budget: { maxTotalTokens: 100 } });
    const parked = await viewWhen(first.runtime, 'r1', parkedOnBudget);
    await first.runtime.close();

    const second = await start({ llm, defaults: DEFAULTS, file: first.file });
    const restored = await second.runtime.view('r1');
    expect(restored.state).toBe('failed');
    expect(restored.context).toEqual(parked.context);
    await settles(second.runtime, 'r1', 1);

    await second.runtime.send('r1', { type: 'budget.raise', maxTotalTokens: 500 });
    const done = await viewWhen(second.runtime, 'r1', idleAfter(2));
    expect((done.context as AgentContext).spent?.totalTokens).toBe(140);
    expect(fake.calls.map((c) => c.userContent)).toEqual(['one', 'two']);
  });

  test('a restart while a call is in flight keeps what was spent: the re-asked call is counted once, and the budget still holds', async () => {
    const first = await start({ llm, defaults: DEFAULTS });
    fake.script(answer('first', 30, 20));
    await spawn(first.runtime, 'r2', { tasks: ['one'], budget: { maxTotalTokens: 100 } });
    await viewWhen(first.runtime, 'r2', idleAfter(1));
    // The second task's call: held mid-answer, and the runtime closed under it.
    const hold = fake.holdAfter(1);
    fake.script(answer('second, cut', 999, 999));
    await first.runtime.send('r2', { type: 'task.add', task: 'two' });
    await first.runtime.send('r2', { type: 'task.add', task: 'three' });
    await hold.reached;
    const inFlight = await first.runtime.view('r2');
    expect(inFlight.state).toEqual({ callingLLM: 'requesting' });
    expect((inFlight.context as AgentContext).spent).toEqual({ totalTokens: 50, costUsd: 0.00026 });
    await first.runtime.close();
    hold.release();

    fake.script(answer('second', 40, 20));
    const second = await start({ llm, defaults: DEFAULTS, file: first.file });
    // Asked again, answered with 60 tokens: 110 of 100, so the third task is not started.
    const parked = await viewWhen(second.runtime, 'r2', parkedOnBudget);
    expect(parked.progress).toBe(2);
    expect((parked.context as AgentContext).spent).toEqual({ totalTokens: 110, costUsd: 0.00054 }); // $0.00026 + $0.00028
    expect((parked.context as AgentContext).current?.task).toBe('three');
    expect(fake.calls.map((c) => c.userContent)).toEqual(['one', 'two', 'two']);
    await settles(second.runtime, 'r2', 3);
  });
});

describe('metrics', () => {
  test('durable_agents_budget_exceeded_total counts the agents parked by their budget, once per parking', async () => {
    const metrics = createMetrics();
    const { runtime } = await start({ llm, defaults: DEFAULTS, observer: metrics.observer });
    expect(await metrics.render()).toContain('durable_agents_budget_exceeded_total{machine="agent"} 0');
    fake.script(answer('first', 100, 20), answer('second', 10, 10));
    await spawn(runtime, 'm1', { tasks: ['one', 'two'], budget: { maxTotalTokens: 100 } });
    await viewWhen(runtime, 'm1', parkedOnBudget);
    // Still over after a raise too small, and after a retry: the same parking.
    await runtime.send('m1', { type: 'budget.raise', maxTotalTokens: 110 });
    await viewWhen(runtime, 'm1', (view, context) => {
      parkedOnBudget(view, context);
      expect(context.lastError?.message).toContain('120 tokens of its 110');
    });
    const before = await lastSeq(runtime, 'm1');
    await runtime.send('m1', { type: 'retry' });
    await vi.waitFor(async () => expect(await lastSeq(runtime, 'm1')).toBeGreaterThan(before));
    await settles(runtime, 'm1', 1);
    expect(await metrics.render()).toContain('durable_agents_budget_exceeded_total{machine="agent"} 1');
    await runtime.send('m1', { type: 'budget.raise', maxTotalTokens: 1000 });
    await viewWhen(runtime, 'm1', idleAfter(2));
    expect(await metrics.render()).toContain('durable_agents_budget_exceeded_total{machine="agent"} 1');
  });
});
