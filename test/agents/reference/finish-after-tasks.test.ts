// `finishAfterTasks` on the PURE reference statechart (no store, no network): an agent spawned with
// it ends in `done` once a task is answered (or skipped) and nothing more is queued; one without it
// waits in `idle` as before; an agent tool's call spawns its reference-agent child with it; and a
// parent ignores the `agent.done` that follows its child's answer. Every invoked actor is a fake
// that never settles: the test plays its part with the `xstate.done/error.actor.<id>` events.
// The same on the real runtime, with crashes: test/runtime/child-agents.test.ts.
import { afterEach, describe, expect, test } from 'vitest';
import { createActor, fromPromise, type AnyActorRef, type AnyEventObject, type Snapshot } from 'xstate';
import { StepError } from '../../../src/core/errors.js';
import { NO_USAGE, textAnswer, type LlmAnswer } from '../../../src/llm/client.js';
import { createAgentMachine } from '../../../src/agents/reference/machine.js';
import { agentInputSchema } from '../../../src/agents/reference/schemas.js';
import { agentCallsToStart } from '../../../src/agents/reference/steps.js';
import type {
  AgentContext, AgentDefaults, AgentInput, EffectRequest, EffectResult, LlmStepInput, ToolResult, ToolSpec, ToolsRequest,
} from '../../../src/agents/reference/types.js';
import { COMMITTED_EVENT } from '../../../src/durable/commit-barrier.js';

const DEFAULTS: AgentDefaults = { model: 'm', maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 100, timeoutMs: 1_000 };
const never = () => new Promise<never>(() => {});
const machine = createAgentMachine(DEFAULTS).provide({
  actors: {
    callLlm: fromPromise<LlmAnswer, LlmStepInput>(never),
    runTools: fromPromise<ToolResult[], ToolsRequest>(never),
    runSideEffect: fromPromise<EffectResult, EffectRequest>(never),
    sleepUntil: fromPromise<void, { at: number }>(never),
  },
});

const started: { actor: AnyActorRef; errors: unknown[] }[] = [];
afterEach(() => {
  for (const { actor, errors } of started.splice(0)) {
    actor.stop();
    expect(errors, 'the actor crashed inside the chart').toEqual([]);
  }
});

/** The agent actor, from its input or from a persisted snapshot (a restore). */
function startAgent(from: { input?: AgentInput; snapshot?: Snapshot<unknown> }, id = 'a1') {
  const actor = createActor(machine, { id, input: from.input ?? {}, ...(from.snapshot ? { snapshot: from.snapshot as never } : {}) });
  const errors: unknown[] = [];
  actor.subscribe({ error: (err) => void errors.push(err) });
  actor.start();
  started.push({ actor, errors });
  const deliver = (event: AnyEventObject) => actor.send(event as never);
  return {
    actor,
    deliver,
    get value() {
      return actor.getSnapshot().value;
    },
    get status() {
      return actor.getSnapshot().status;
    },
    get context(): AgentContext {
      return actor.getSnapshot().context;
    },
    /** The model answers `answer`, the answer is committed: the agent is in `sideEffect`. */
    answers(answer: LlmAnswer | string) {
      deliver({ type: 'xstate.done.actor.llm', output: typeof answer === 'string' ? textAnswer(answer) : answer });
      deliver({ type: COMMITTED_EVENT });
    },
    /** The task's effect (webhook, report to the parent) is done. */
    effectDone: () => deliver({ type: 'xstate.done.actor.effect', output: { delivered: false, idempotencyKey: `${id}:1` } }),
  };
}

describe('an agent spawned with finishAfterTasks', () => {
  test('ends in done with the checkpoint that completes its task, its result kept', () => {
    const agent = startAgent({ input: { tasks: ['t1'], finishAfterTasks: true } });
    expect(agent.context.finishAfterTasks).toBe(true);
    agent.answers('r1');
    expect(agent.value).toEqual({ sideEffect: 'requesting' });
    agent.effectDone();
    expect(agent.value).toBe('done');
    expect(agent.status).toBe('done');
    expect(agent.context.results.map((r) => r.response)).toEqual(['r1']);
    expect(agent.context.progress).toBe(1);
  });

  test('answers every queued task first, also one added while it worked', () => {
    const agent = startAgent({ input: { tasks: ['t1', 't2'], finishAfterTasks: true } });
    agent.answers('r1');
    agent.deliver({ type: 'task.add', task: 't3' });
    agent.effectDone();
    expect(agent.value).toEqual({ callingLLM: 'requesting' });
    agent.answers('r2');
    agent.effectDone();
    expect(agent.value).toEqual({ callingLLM: 'requesting' });
    agent.answers('r3');
    agent.effectDone();
    expect(agent.status).toBe('done');
    expect(agent.context.results.map((r) => r.task)).toEqual(['t1', 't2', 't3']);
  });

  test('spawned without tasks, waits in idle for its first one', () => {
    const agent = startAgent({ input: { finishAfterTasks: true } });
    expect(agent.value).toBe('idle');
    expect(agent.status).toBe('active');
    agent.deliver({ type: 'task.add', task: 't1' });
    agent.answers('r1');
    agent.effectDone();
    expect(agent.status).toBe('done');
  });

  test('finishes after a skipped last task too (its parent then reads "finished without an answer")', () => {
    const agent = startAgent({ input: { tasks: ['t1'], finishAfterTasks: true } });
    agent.deliver({ type: 'xstate.error.actor.llm', error: new StepError('permanent', 'llm_rejected', 'Refused (HTTP 400).', { status: 400 }) });
    expect(agent.value).toBe('failed');
    agent.deliver({ type: 'task.skip' });
    expect(agent.status).toBe('done');
    expect(agent.context.skipped).toBe(1);
  });

  test('restored from a checkpoint taken mid-task, still finishes once the task is done', () => {
    const first = startAgent({ input: { tasks: ['t1'], finishAfterTasks: true } });
    first.answers('r1');
    const stored = JSON.parse(JSON.stringify(first.actor.getPersistedSnapshot())) as Snapshot<unknown>;
    first.actor.stop();
    const restored = startAgent({ snapshot: stored });
    expect(restored.value).toEqual({ sideEffect: 'requesting' });
    restored.effectDone();
    expect(restored.status).toBe('done');
    expect(restored.context.results.map((r) => r.response)).toEqual(['r1']);
  });
});

describe('an agent without it', () => {
  test('waits in idle after its tasks, as before, its context without the key', () => {
    for (const input of [{ tasks: ['t1'] }, { tasks: ['t1'], finishAfterTasks: false }]) {
      const agent = startAgent({ input });
      agent.answers('r1');
      agent.effectDone();
      expect(agent.value).toBe('idle');
      expect(agent.status).toBe('active');
      expect('finishAfterTasks' in agent.context).toBe(false);
    }
  });

  test('the spawn input schema takes a boolean, nothing else', () => {
    expect(agentInputSchema.safeParse({ finishAfterTasks: true }).success).toBe(true);
    expect(agentInputSchema.safeParse({ finishAfterTasks: 'yes' }).success).toBe(false);
  });
});

describe("an agent tool's child", () => {
  const call = (name: string) => ({ id: 'c1', name, arguments: JSON.stringify({ task: 'Find it.' }) });
  const callsOf = (tool: ToolSpec) =>
    agentCallsToStart({ messages: [{ role: 'assistant', content: null, toolCalls: [call(tool.name)] }], tools: [tool], decisions: {}, current: { seq: 1, task: 't' } }, 'p');
  const agentTool = (machine: string, input?: Record<string, unknown>): ToolSpec => ({
    name: 'ask', description: null, parameters: {}, approval: false, agent: { machine, ...(input ? { input } : {}) },
  });

  test('of the reference agent is spawned to finish after its task; the tool input may say otherwise', () => {
    expect(callsOf(agentTool('agent', { system: 's' }))[0]!.input).toEqual({ finishAfterTasks: true, system: 's', tasks: ['Find it.'] });
    expect(callsOf(agentTool('agent', { finishAfterTasks: false }))[0]!.input).toEqual({ finishAfterTasks: false, tasks: ['Find it.'] });
  });

  test('of another machine gets only the tool input and its task (it ends on its own)', () => {
    expect(callsOf(agentTool('collector', { n: 2 }))[0]!.input).toEqual({ n: 2, tasks: ['Find it.'] });
  });

  test("its parent takes the answer as the call's result, and ignores the agent.done that follows", () => {
    const tools = [{ name: 'ask', agent: { machine: 'agent' } }];
    const parent = startAgent({ input: { tasks: ['Ask'], tools } }, 'p');
    parent.answers({ content: null, toolCalls: [call('ask')], usage: NO_USAGE });
    expect(parent.context.agentCalls).toEqual({ c1: 'p:1:c1' });
    parent.deliver({ type: 'xstate.done.actor.tools', output: [] });
    expect(parent.value).toEqual({ sideEffect: 'awaitingAgents' });
    parent.deliver({ type: 'agent.response', agentId: 'p:1:c1', seq: 1, task: 'Find it.', response: 'Found.' });
    expect(parent.value).toEqual({ callingLLM: 'requesting' });
    const answered = parent.actor.getSnapshot();
    expect(answered.context.messages.at(-1)).toEqual({ role: 'tool', toolCallId: 'c1', content: 'Found.' });
    // The child's end: no call of the parent waits for it any more, so nothing changes.
    parent.deliver({ type: 'agent.done', agentId: 'p:1:c1', output: null });
    expect(parent.actor.getSnapshot().context).toEqual(answered.context);
    expect(parent.value).toEqual({ callingLLM: 'requesting' });
  });
});
