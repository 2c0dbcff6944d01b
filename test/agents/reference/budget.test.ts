// The reference chart's budget (input `budget`, event `budget.raise`), PURE: no store, no network.
// Invoked actors are fakes that record their input and never settle; the test plays their part.
// With the runtime, a SQLite file and the real `openai` client: test/runtime/budget.test.ts.
import { afterEach, describe, expect, test } from 'vitest';
import { createActor, fromPromise, type AnyEventObject } from 'xstate';
import { StepError } from '../../../src/core/errors.js';
import type { LlmAnswer } from '../../../src/llm/client.js';
import { createAgentMachine } from '../../../src/agents/reference/machine.js';
import { agentDefinition } from '../../../src/agents/reference/definition.js';
import { costOf, raisedBudget, refuseBudgetRaise, spend } from '../../../src/agents/reference/budget.js';
import { COMMITTED_EVENT } from '../../../src/durable/commit-barrier.js';
import type { AgentContext, AgentDefaults, AgentEvent, AgentInput, LlmRequest, ToolResult, ToolsRequest } from '../../../src/agents/reference/types.js';
import { createSimulatedLlm } from '../../../src/llm/simulated-client.js';

const PRICES = { 'model-priced': { inputPerMTok: 2, outputPerMTok: 10 } };
const DEFAULTS: AgentDefaults = { model: 'model-priced', maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 10_000, timeoutMs: 5_000, prices: PRICES };

const never = <T>() => new Promise<T>(() => {});
const stopped: (() => void)[] = [];
afterEach(() => {
  for (const stop of stopped.splice(0)) stop();
});

function startAgent(input: AgentInput, defaults: Partial<AgentDefaults> = {}) {
  const llm: LlmRequest[] = [];
  const errors: unknown[] = [];
  const machine = createAgentMachine({ ...DEFAULTS, ...defaults }).provide({
    actors: {
      callLlm: fromPromise<LlmAnswer, LlmRequest>(({ input }) => (llm.push(input), never())),
      runTools: fromPromise<ToolResult[], ToolsRequest>(() => never()),
      runSideEffect: fromPromise(() => never()),
      sleepUntil: fromPromise(() => never()),
    },
  });
  const actor = createActor(machine, { id: 'agent-1', input });
  actor.subscribe({ error: (err) => void errors.push(err) });
  actor.start();
  stopped.push(() => {
    actor.stop();
    expect(errors, 'the actor crashed inside the chart').toEqual([]);
  });
  const deliver = (event: AnyEventObject) => actor.send(event as never);
  return {
    llm,
    get context(): AgentContext {
      return actor.getSnapshot().context;
    },
    get value() {
      return actor.getSnapshot().value;
    },
    send: (event: AgentEvent) => actor.send(event),
    /** The LLM answers with text that used these tokens; the answer is committed; its webhook is delivered. */
    answer(promptTokens: number, completionTokens: number) {
      deliver({ type: 'xstate.done.actor.llm', output: { content: 'ok', toolCalls: [], usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens } } });
      deliver({ type: COMMITTED_EVENT });
      deliver({ type: 'xstate.done.actor.effect', output: { delivered: false, idempotencyKey: 'k' } });
    },
    /** The LLM answers with one tool call; the answer is committed, the tool's result comes back. */
    answerWithTool(promptTokens: number, completionTokens: number) {
      deliver({
        type: 'xstate.done.actor.llm',
        output: { content: null, toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{}' }], usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens } },
      });
      deliver({ type: COMMITTED_EVENT });
      deliver({ type: 'xstate.done.actor.tools', output: [{ callId: 'c1', name: 'lookup', ok: true, content: '{}' }] });
    },
  };
}

const TOOLS: AgentInput['tools'] = [{ name: 'lookup', url: 'http://127.0.0.1:9/lookup' }];

describe('spawn', () => {
  test('without a budget the context has neither budget nor spent (as before budgets existed)', () => {
    const agent = startAgent({});
    expect(agent.context).not.toHaveProperty('budget');
    expect(agent.context).not.toHaveProperty('spent');
  });

  test("with a budget the context has its limits, the model's price frozen, and nothing spent", () => {
    const agent = startAgent({ budget: { maxTotalTokens: 100, maxCostUsd: 1 } });
    expect(agent.context.budget).toEqual({ maxTotalTokens: 100, maxCostUsd: 1, price: PRICES['model-priced'] });
    expect(agent.context.spent).toEqual({ totalTokens: 0, costUsd: 0 });
  });

  test('a model without a price: tokens only', () => {
    const agent = startAgent({ model: 'other', budget: { maxTotalTokens: 100 } });
    expect(agent.context.budget).toEqual({ maxTotalTokens: 100 });
    expect(agent.context.spent).toEqual({ totalTokens: 0 });
  });
});

describe('exceeded before a call', () => {
  test('each answer adds to spent (tokens and dollars at the frozen price)', () => {
    const agent = startAgent({ tasks: ['t1', 't2'], budget: { maxTotalTokens: 10_000 } });
    agent.answer(1000, 200);
    expect(agent.context.spent).toEqual({ totalTokens: 1200, costUsd: costOf({ promptTokens: 1000, completionTokens: 200 }, PRICES['model-priced']) });
    expect(agent.context.spent?.costUsd).toBe(0.004);
    agent.answer(500, 100);
    expect(agent.context.spent).toEqual({ totalTokens: 1800, costUsd: 0.006 });
    expect(agent.value).toEqual('idle');
  });

  test('the next task finds the tokens spent: failed, budget_exceeded, and no LLM call made', () => {
    const agent = startAgent({ tasks: ['t1', 't2'], budget: { maxTotalTokens: 100 } });
    agent.answer(80, 30); // 110 ≥ 100: the task ran over, but it had started under the budget
    expect(agent.llm).toHaveLength(1);
    expect(agent.value).toBe('failed');
    expect(agent.context.current?.task).toBe('t2');
    expect(agent.context.lastError).toEqual({
      kind: 'permanent',
      step: 'llm',
      code: 'budget_exceeded',
      message: expect.stringContaining('110 tokens of its 100 (maxTotalTokens)'),
      attempts: 0,
    });
    expect(agent.context.attempt).toBe(0);
    expect(agent.context.results).toHaveLength(1);
  });

  test('exactly at the limit is over: a call is made only while spent < max', () => {
    const agent = startAgent({ tasks: ['t1', 't2'], budget: { maxTotalTokens: 100 } });
    agent.answer(60, 40);
    expect(agent.value).toBe('failed');
  });

  test('a follow-up turn after tool results is checked too', () => {
    const agent = startAgent({ tasks: ['t1'], tools: TOOLS, budget: { maxTotalTokens: 50 } });
    agent.answerWithTool(40, 20);
    expect(agent.value).toBe('failed');
    expect(agent.context.lastError?.code).toBe('budget_exceeded');
    expect(agent.context.turn).toBe(1);
    expect(agent.llm).toHaveLength(1);
  });

  test('dollars: the cost limit parks it', () => {
    const agent = startAgent({ tasks: ['t1', 't2'], budget: { maxCostUsd: 0.01 } });
    agent.answer(1000, 1000); // 0.002 + 0.01 = $0.012
    expect(agent.value).toBe('failed');
    expect(agent.context.lastError?.message).toContain('$0.012 of its $0.01 (maxCostUsd)');
  });

  test('retry without a raise: still over, so failed again without a call', () => {
    const agent = startAgent({ tasks: ['t1', 't2'], budget: { maxTotalTokens: 100 } });
    agent.answer(100, 10);
    agent.send({ type: 'retry' });
    expect(agent.value).toBe('failed');
    expect(agent.context.lastError?.code).toBe('budget_exceeded');
    expect(agent.llm).toHaveLength(1);
  });

  test('task.skip skips the task; the next one is checked again', () => {
    const agent = startAgent({ tasks: ['t1', 't2', 't3'], budget: { maxTotalTokens: 100 } });
    agent.answer(100, 10);
    agent.send({ type: 'task.skip' });
    expect(agent.value).toBe('failed');
    expect(agent.context.current?.task).toBe('t3');
    expect(agent.context.skipped).toBe(1);
  });
});

describe('budget.raise', () => {
  test('in failed on its budget, a raise above what was spent makes the call it did not make', () => {
    const agent = startAgent({ tasks: ['t1', 't2'], budget: { maxTotalTokens: 100 } });
    agent.answer(100, 10);
    agent.send({ type: 'budget.raise', maxTotalTokens: 500 });
    expect(agent.value).toEqual({ callingLLM: 'requesting' });
    expect(agent.context.budget?.maxTotalTokens).toBe(500);
    // As after `retry`: the last error stays until the task ends.
    expect(agent.context.lastError?.code).toBe('budget_exceeded');
    expect(agent.context.attempt).toBe(1);
    expect(agent.llm).toHaveLength(2);
    expect(agent.llm[1]!.messages.at(-1)).toEqual({ role: 'user', content: 't2' });
    agent.answer(10, 10);
    expect(agent.value).toBe('idle');
    expect(agent.context.progress).toBe(2);
  });

  test('a raise still under what was spent: stays failed, its message with the new limit', () => {
    const agent = startAgent({ tasks: ['t1', 't2'], budget: { maxTotalTokens: 100 } });
    agent.answer(100, 50);
    agent.send({ type: 'budget.raise', maxTotalTokens: 120 });
    expect(agent.value).toBe('failed');
    expect(agent.context.budget?.maxTotalTokens).toBe(120);
    expect(agent.context.lastError?.message).toContain('150 tokens of its 120');
    expect(agent.llm).toHaveLength(1);
  });

  test('with two limits both must be under: raising one leaves the other reached', () => {
    const agent = startAgent({ tasks: ['t1', 't2'], budget: { maxTotalTokens: 100, maxCostUsd: 0.0001 } });
    agent.answer(100, 10);
    agent.send({ type: 'budget.raise', maxTotalTokens: 1000 });
    expect(agent.value).toBe('failed');
    expect(agent.context.lastError?.message).toContain('maxCostUsd');
    expect(agent.context.lastError?.message).not.toContain('maxTotalTokens');
    agent.send({ type: 'budget.raise', maxCostUsd: 1 });
    expect(agent.value).toEqual({ callingLLM: 'requesting' });
  });

  test('while not failed it raises the limits for later calls', () => {
    const agent = startAgent({ tasks: ['t1'], budget: { maxTotalTokens: 100 } });
    agent.send({ type: 'budget.raise', maxTotalTokens: 300 });
    expect(agent.value).toEqual({ callingLLM: 'requesting' });
    expect(agent.context.budget?.maxTotalTokens).toBe(300);
    agent.answer(100, 50);
    agent.send({ type: 'task.add', task: 't2' });
    expect(agent.value).toEqual({ callingLLM: 'requesting' });
    expect(agent.llm).toHaveLength(2);
  });

  test('in failed for another reason it does not resume the agent (retry does)', () => {
    const agent = startAgent({ tasks: ['t1'], budget: { maxTotalTokens: 100 } });
    agent.send({ type: 'xstate.error.actor.llm', error: new StepError('permanent', 'llm_rejected', 'No.') } as never);
    expect(agent.value).toBe('failed');
    agent.send({ type: 'budget.raise', maxTotalTokens: 300 });
    expect(agent.value).toBe('failed');
    expect(agent.context.lastError?.code).toBe('llm_rejected');
    expect(agent.llm).toHaveLength(1);
  });

  test('never lowers a limit, nor adds one the agent did not have', () => {
    expect(raisedBudget({ maxTotalTokens: 100 }, { maxTotalTokens: 50, maxCostUsd: 3 })).toEqual({ maxTotalTokens: 100 });
    const agent = startAgent({ tasks: ['t1'], budget: { maxTotalTokens: 100 } });
    agent.send({ type: 'budget.raise', maxTotalTokens: 10, maxCostUsd: 5 });
    expect(agent.context.budget).toEqual({ maxTotalTokens: 100, price: PRICES['model-priced'] });
  });

  test('an agent without a budget: nothing changes', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.send({ type: 'budget.raise', maxTotalTokens: 10 });
    expect(agent.context).not.toHaveProperty('budget');
    expect(agent.value).toEqual({ callingLLM: 'requesting' });
  });
});

describe('refusals (HTTP 409) and validation (400)', () => {
  const failedOnBudget = { state: 'failed', context: { budget: { maxTotalTokens: 100 }, lastError: { code: 'budget_exceeded' } } };
  const raise = (fields: object) => ({ type: 'budget.raise', ...fields });

  test('taken: in failed on its budget, or not failed, raising a limit it has', () => {
    expect(refuseBudgetRaise(raise({ maxTotalTokens: 200 }), failedOnBudget)).toBeUndefined();
    expect(refuseBudgetRaise(raise({ maxTotalTokens: 200 }), { state: 'idle', context: { budget: { maxTotalTokens: 100 }, lastError: null } })).toBeUndefined();
  });

  test('refused: failed for another reason, no budget, lowering, a limit it has not', () => {
    expect(refuseBudgetRaise(raise({ maxTotalTokens: 200 }), { state: 'failed', context: { budget: { maxTotalTokens: 100 }, lastError: { code: 'llm_rejected' } } })).toMatch(
      /another reason \(llm_rejected\).*retry/,
    );
    expect(refuseBudgetRaise(raise({ maxTotalTokens: 200 }), { state: 'idle', context: { lastError: null } })).toMatch(/no budget/);
    expect(refuseBudgetRaise(raise({ maxTotalTokens: 100 }), failedOnBudget)).toMatch(/only raises: maxTotalTokens 100 is not above the agent's 100/);
    expect(refuseBudgetRaise(raise({ maxCostUsd: 5 }), failedOnBudget)).toMatch(/no maxCostUsd limit/);
  });

  const definition = agentDefinition({ llm: createSimulatedLlm(), defaults: { model: 'gpt-4o-mini' }, prices: { 'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10 } } });
  const input = (value: unknown) => definition.input!.safeParse(value);

  test('input: a strict object of positive limits, at least one', () => {
    expect(input({ budget: { maxTotalTokens: 1000 } }).success).toBe(true);
    expect(input({ model: 'gpt-4o', budget: { maxCostUsd: 0.5, maxTotalTokens: 10 } }).success).toBe(true);
    for (const budget of [{}, { maxTotalTokens: 0 }, { maxTotalTokens: 1.5 }, { maxCostUsd: -1 }, { maxTotalTokens: 10, other: 1 }, 5]) {
      expect(input({ budget }).success, JSON.stringify(budget)).toBe(false);
    }
  });

  test("input: maxCostUsd for a model with no price is refused, saying which model and what to do", () => {
    const result = input({ budget: { maxCostUsd: 1 } });
    expect(result.success).toBe(false);
    expect(result.error!.issues).toEqual([
      expect.objectContaining({ path: ['budget', 'maxCostUsd'], message: expect.stringMatching(/no price is known for the model "gpt-4o-mini".*known for: gpt-4o.*maxTotalTokens/) }),
    ]);
  });

  test('event: strict, positive, at least one limit', () => {
    const schema = definition.events!['budget.raise']!;
    expect(schema.safeParse({ type: 'budget.raise', maxTotalTokens: 10 }).success).toBe(true);
    expect(schema.safeParse({ type: 'budget.raise', maxCostUsd: 0.5 }).success).toBe(true);
    for (const bad of [{}, { maxTotalTokens: -1 }, { maxCostUsd: 0 }, { maxTotalTokens: 10, extra: true }]) {
      expect(schema.safeParse({ type: 'budget.raise', ...bad }).success, JSON.stringify(bad)).toBe(false);
    }
  });

  test('spend without a budget tracks nothing', () => {
    expect(spend({}, { promptTokens: 1, completionTokens: 1, totalTokens: 2 })).toBeUndefined();
  });
});
