// Long on purpose: one file per chart, a describe per state, so the chart and its tests read side by side.
// Transition-level tests of the PURE reference statechart: no store, no network. Every invoked actor
// is replaced by a fake that records its input and never settles; the test then plays the part of
// the actor by sending the `xstate.done.actor.<id>` / `xstate.error.actor.<id>` event XState would.
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createActor, fromPromise, waitFor, type AnyActorRef, type AnyEventObject } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import { StepError } from '../../../src/core/errors.js';
import { lastUserText, NO_USAGE, textAnswer, type LlmAnswer } from '../../../src/llm/client.js';
import { createAgentMachine } from '../../../src/agents/reference/machine.js';
import { AWAIT_COMMIT_TAG, COMMITTED_EVENT } from '../../../src/durable/commit-barrier.js';
import type {
  AgentContext,
  AgentDefaults,
  AgentEvent,
  AgentInput,
  EffectRequest,
  EffectResult,
  LlmRequest,
} from '../../../src/agents/reference/types.js';
import { backoffDelay } from '../../../src/core/backoff.js';
import { nextRandom, seedFrom } from '../../../src/core/random.js';

const DEFAULTS: AgentDefaults = { model: 'model-default', maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 10_000, timeoutMs: 5_000 };

/** A fixed clock for every test that looks at `nextAttemptAt` (only `Date` is faked). */
const NOW = Date.UTC(2026, 10, 30, 5, 41, 7, 123);

const transient = (extra: { retryAfterMs?: number; status?: number } = {}) =>
  new StepError('transient', 'llm_unavailable', `Injected transient failure (HTTP ${extra.status ?? 503}).`, { status: 503, ...extra });
const permanent = () => new StepError('permanent', 'llm_rejected', 'Injected permanent failure (HTTP 400).', { status: 400 });

const never = <T>() => new Promise<T>(() => {});

interface StartOptions {
  id?: string;
  defaults?: Partial<AgentDefaults>;
}

/** Agents started by the current test, stopped and checked for crashes after it. */
const running: { actor: AnyActorRef; errors: unknown[] }[] = [];

/** The agent actor plus a hand on each of its invoked actors. */
function startAgent(input: AgentInput = {}, options: StartOptions = {}) {
  const calls = { llm: [] as LlmRequest[], effect: [] as EffectRequest[], sleep: [] as { at: number }[] };
  const errors: unknown[] = [];
  const machine = createAgentMachine({ ...DEFAULTS, ...options.defaults }).provide({
    actors: {
      callLlm: fromPromise<LlmAnswer, LlmRequest>(({ input }) => (calls.llm.push(input), never())),
      runSideEffect: fromPromise<EffectResult, EffectRequest>(({ input }) => (calls.effect.push(input), never())),
      sleepUntil: fromPromise<void, { at: number }>(({ input }) => (calls.sleep.push(input), never())),
    },
  });
  const actor = createActor(machine, { id: options.id ?? 'agent-1', input });
  // An actor error with no observer is re-thrown asynchronously; record it and fail the test instead.
  actor.subscribe({ error: (err) => void errors.push(err) });
  actor.start();
  const deliver = (event: AnyEventObject) => actor.send(event as never);

  const agent = {
    actor,
    calls,
    errors,
    get snapshot() {
      return actor.getSnapshot();
    },
    get context(): AgentContext {
      return actor.getSnapshot().context;
    },
    get value() {
      return actor.getSnapshot().value;
    },
    send: (event: AgentEvent) => actor.send(event),
    llmAnswers: (answer: string | LlmAnswer) =>
      deliver({ type: 'xstate.done.actor.llm', output: typeof answer === 'string' ? textAnswer(answer) : answer }),
    llmFails: (error: unknown) => deliver({ type: 'xstate.error.actor.llm', error }),
    llmBackoffEnds: () => deliver({ type: 'xstate.done.actor.llmBackoff', output: undefined }),
    /** What the runtime sends once the checkpoint of `persisted` is committed. */
    commitDone: () => deliver({ type: COMMITTED_EVENT }),
    effectDone: () => deliver({ type: 'xstate.done.actor.effect', output: { delivered: true, status: 200, idempotencyKey: 'k' } }),
    effectFails: (error: unknown) => deliver({ type: 'xstate.error.actor.effect', error }),
    effectBackoffEnds: () => deliver({ type: 'xstate.done.actor.effectBackoff', output: undefined }),
    /** Runs the current task through LLM, commit and effect, all succeeding. */
    completeTask(answer = 'an answer') {
      this.llmAnswers(answer);
      this.commitDone();
      this.effectDone();
    },
  };
  running.push(agent);
  return agent;
}
type Agent = ReturnType<typeof startAgent>;

afterEach(() => {
  vi.useRealTimers();
  for (const agent of running.splice(0)) {
    agent.actor.stop();
    expect(agent.errors, 'the actor crashed inside the chart').toEqual([]);
  }
});

/** The non-final states, each with a way to drive a fresh agent into it. */
const STATES: { name: string; value: unknown; drive: (a: Agent) => void }[] = [
  { name: 'idle', value: 'idle', drive: () => {} },
  { name: 'callingLLM.requesting', value: { callingLLM: 'requesting' }, drive: (a) => a.send({ type: 'task.add', task: 't1' }) },
  {
    name: 'callingLLM.backingOff',
    value: { callingLLM: 'backingOff' },
    drive: (a) => (a.send({ type: 'task.add', task: 't1' }), a.llmFails(transient())),
  },
  { name: 'persisted', value: 'persisted', drive: (a) => (a.send({ type: 'task.add', task: 't1' }), a.llmAnswers('a1')) },
  {
    name: 'sideEffect.requesting',
    value: { sideEffect: 'requesting' },
    drive: (a) => (a.send({ type: 'task.add', task: 't1' }), a.llmAnswers('a1'), a.commitDone()),
  },
  {
    name: 'sideEffect.backingOff',
    value: { sideEffect: 'backingOff' },
    drive: (a) => (a.send({ type: 'task.add', task: 't1' }), a.llmAnswers('a1'), a.commitDone(), a.effectFails(transient())),
  },
  {
    name: 'failed (at the LLM)',
    value: 'failed',
    drive: (a) => (a.send({ type: 'task.add', task: 't1' }), a.llmFails(permanent())),
  },
  {
    name: 'failed (at the effect)',
    value: 'failed',
    drive: (a) => (a.send({ type: 'task.add', task: 't1' }), a.llmAnswers('a1'), a.commitDone(), a.effectFails(permanent())),
  },
];

function agentIn(name: string): Agent {
  const state = STATES.find((s) => s.name === name)!;
  const agent = startAgent();
  state.drive(agent);
  expect(agent.value).toEqual(state.value);
  return agent;
}

/** The delays the chart must draw for agent `id`: its PRNG is seeded from the id and lives in context. */
function expectedDelays(id: string, count: number, options: { baseDelayMs: number; maxDelayMs: number }): number[] {
  let rng = seedFrom(id);
  return Array.from({ length: count }, (_, i) => {
    const { value, state } = nextRandom(rng);
    rng = state;
    return backoffDelay(i + 1, options, value);
  });
}

describe('structure', () => {
  test('the top-level states are exactly the ones the contract names', () => {
    const machine = createAgentMachine(DEFAULTS);
    expect(Object.keys(machine.root.states)).toEqual(['idle', 'callingLLM', 'persisted', 'sideEffect', 'failed', 'done']);
    expect(machine.root.states.done!.type).toBe('final');
  });

  test('every state is reachable through the chart’s own events', () => {
    const events = [
      { type: 'task.add', task: 't' },
      { type: 'retry' },
      { type: 'task.skip' },
      { type: 'finish' },
      { type: 'xstate.done.actor.llm', output: textAnswer('a') },
      { type: 'xstate.done.actor.llm', output: { content: null, toolCalls: [{ id: 'c1', name: 'ask', arguments: '{}' }], usage: NO_USAGE } },
      { type: 'tool.approve', callId: 'c1' },
      { type: 'xstate.done.actor.tools', output: [{ callId: 'c1', name: 'ask', ok: true, content: 'yes' }] },
      { type: 'xstate.error.actor.tools', error: transient() },
      { type: 'xstate.error.actor.tools', error: permanent() },
      { type: 'xstate.done.actor.toolsBackoff' },
      { type: 'xstate.error.actor.llm', error: transient() },
      { type: 'xstate.error.actor.llm', error: permanent() },
      { type: 'xstate.done.actor.llmBackoff' },
      { type: COMMITTED_EVENT },
      { type: 'xstate.done.actor.effect', output: {} },
      { type: 'xstate.error.actor.effect', error: transient() },
      { type: 'xstate.error.actor.effect', error: permanent() },
      { type: 'xstate.done.actor.effectBackoff' },
    ];
    const paths = getShortestPaths(createAgentMachine(DEFAULTS), {
      events: events as never,
      input: { tools: [{ name: 'ask', url: 'http://tool.test/ask', approval: true }], maxTurns: 2 },
      // What the routing guards read: pending approvals, whether the last answer asked for tools, turns left.
      serializeState: (s) => {
        const c = s.context as AgentContext;
        const last = c.messages.at(-1);
        return JSON.stringify([s.value, c.pendingApprovals.length, last?.role, last?.role === 'assistant' && !!last.toolCalls, c.turn >= c.maxTurns]);
      },
    });
    const reached = new Set(paths.map((p) => JSON.stringify(p.state.value)));
    expect([...reached].sort()).toEqual(
      [
        'idle',
        { callingLLM: 'requesting' },
        { callingLLM: 'backingOff' },
        'persisted',
        { sideEffect: 'awaitingApproval' },
        { sideEffect: 'runningTools' },
        { sideEffect: 'toolsBackoff' },
        { sideEffect: 'requesting' },
        { sideEffect: 'backingOff' },
        'failed',
        'done',
      ]
        .map((v) => JSON.stringify(v))
        .sort(),
    );
  });
});

describe('start', () => {
  test('an agent spawned without tasks waits in idle with nothing to do', () => {
    const agent = startAgent();
    expect(agent.value).toBe('idle');
    expect(agent.snapshot.status).toBe('active');
    expect(agent.context).toMatchObject({ queue: [], taken: 0, current: null, answer: null, attempt: 0, progress: 0, skipped: 0, lastError: null });
    expect(agent.calls.llm).toEqual([]);
  });

  test('context takes model, system, webhook and retry from input, the rest from the server defaults', () => {
    const plain = startAgent();
    expect(plain.context).toMatchObject({
      model: 'model-default',
      system: null,
      webhook: null,
      retry: { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 10_000, timeoutMs: 5_000 },
    });
    const custom = startAgent({
      model: 'm2',
      system: 'be brief',
      webhook: 'http://hook.test/x',
      retry: { maxAttempts: 7, baseDelayMs: 20, timeoutMs: 900 },
    });
    expect(custom.context).toMatchObject({
      model: 'm2',
      system: 'be brief',
      webhook: 'http://hook.test/x',
      retry: { maxAttempts: 7, baseDelayMs: 20, maxDelayMs: 10_000, timeoutMs: 900 },
    });
  });

  test('an agent spawned with tasks calls the LLM at once for the first one', () => {
    const agent = startAgent({ tasks: ['first', 'second'], system: 'sys', model: 'm' });
    expect(agent.value).toEqual({ callingLLM: 'requesting' });
    expect(agent.context).toMatchObject({ queue: ['second'], taken: 1, current: { seq: 1, task: 'first' }, attempt: 1 });
    expect(agent.calls.llm).toEqual([
      { model: 'm', messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'first' }], timeoutMs: 5_000, seq: 1, turn: 0 },
    ]);
  });
});

describe('task.add', () => {
  test('idle picks up an added task and calls the LLM with it', () => {
    const agent = startAgent();
    agent.send({ type: 'task.add', task: 'hello' });
    expect(agent.value).toEqual({ callingLLM: 'requesting' });
    expect(agent.context).toMatchObject({ queue: [], current: { seq: 1, task: 'hello' }, attempt: 1 });
    expect(agent.calls.llm.map((c) => lastUserText(c))).toEqual(['hello']);
  });

  test.each(STATES.filter((s) => s.name !== 'idle').map((s) => s.name))('%s queues an added task and stays where it is', (name) => {
    const agent = agentIn(name);
    const before = agent.snapshot;
    agent.send({ type: 'task.add', task: 'later' });
    expect(agent.value).toEqual(before.value);
    expect(agent.context.queue).toEqual([...before.context.queue, 'later']);
    expect(agent.context.current).toEqual(before.context.current);
    expect(agent.context.progress).toBe(before.context.progress);
  });
});

describe('one task, all steps succeeding', () => {
  test('the LLM answer moves the agent to persisted with the answer in context', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.llmAnswers('forty-two');
    expect(agent.value).toBe('persisted');
    expect(agent.context).toMatchObject({ answer: 'forty-two', attempt: 0, nextAttemptAt: null, current: { seq: 1, task: 't1' } });
    expect(agent.calls.effect).toEqual([]);
  });

  test('persisted runs the side effect only once the commit barrier is done', () => {
    const agent = startAgent({ tasks: ['t1'], webhook: 'http://hook.test/x' });
    agent.llmAnswers('forty-two');
    expect(agent.calls.effect).toEqual([]);
    agent.commitDone();
    expect(agent.value).toEqual({ sideEffect: 'requesting' });
    expect(agent.context.attempt).toBe(1);
    expect(agent.calls.effect).toEqual([{ seq: 1, task: 't1', response: 'forty-two', webhook: 'http://hook.test/x', timeoutMs: 5_000 }]);
  });

  test('persisted is a commit barrier: only the runtime’s committed event moves it on, whatever else arrives', async () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.llmAnswers('forty-two');
    expect(agent.value).toBe('persisted');
    expect(agent.snapshot.hasTag(AWAIT_COMMIT_TAG)).toBe(true);
    expect(agent.snapshot.children).toEqual({});
    agent.send({ type: 'task.add', task: 't2' });
    agent.send({ type: 'retry' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(agent.value).toBe('persisted');
    expect(agent.calls.effect).toEqual([]);
    agent.commitDone();
    expect(agent.value).toEqual({ sideEffect: 'requesting' });
    expect(agent.snapshot.hasTag(AWAIT_COMMIT_TAG)).toBe(false);
    expect(agent.calls.effect).toHaveLength(1);
  });

  test('the effect done returns the agent to idle with progress counted and the answer dropped', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.completeTask('forty-two');
    expect(agent.value).toBe('idle');
    expect(agent.context).toMatchObject({ progress: 1, skipped: 0, current: null, answer: null, attempt: 0, lastError: null, taken: 1 });
  });

  test('the next queued task is taken right after an effect, with the next seq', () => {
    const agent = startAgent({ tasks: ['t1', 't2', 't3'] });
    agent.completeTask('a1');
    expect(agent.value).toEqual({ callingLLM: 'requesting' });
    expect(agent.context).toMatchObject({ current: { seq: 2, task: 't2' }, queue: ['t3'], progress: 1, answer: null, attempt: 1 });
    agent.completeTask('a2');
    expect(agent.context.current).toEqual({ seq: 3, task: 't3' });
    agent.completeTask('a3');
    expect(agent.value).toBe('idle');
    expect(agent.context.progress).toBe(3);
    expect(agent.calls.llm.map((c) => lastUserText(c))).toEqual(['t1', 't2', 't3']);
    expect(agent.calls.effect.map((c) => [c.seq, c.task, c.response])).toEqual([
      [1, 't1', 'a1'],
      [2, 't2', 'a2'],
      [3, 't3', 'a3'],
    ]);
  });

  test('seq keeps counting across idle periods', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.completeTask();
    expect(agent.value).toBe('idle');
    agent.send({ type: 'task.add', task: 't2' });
    expect(agent.context.current).toEqual({ seq: 2, task: 't2' });
  });
});

describe('LLM failures', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
  });

  test('a transient error backs off until a future nextAttemptAt, with the call counted', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.llmFails(transient());
    expect(agent.value).toEqual({ callingLLM: 'backingOff' });
    expect(agent.context.attempt).toBe(1);
    expect(agent.context.nextAttemptAt).toBeGreaterThan(NOW);
    expect(agent.calls.sleep).toEqual([{ at: agent.context.nextAttemptAt }]);
    expect(agent.calls.llm).toHaveLength(1);
  });

  test('the end of the backoff calls the LLM again with the same task, as attempt 2', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.llmFails(transient());
    agent.llmBackoffEnds();
    expect(agent.value).toEqual({ callingLLM: 'requesting' });
    expect(agent.context.attempt).toBe(2);
    expect(agent.calls.llm.map((c) => lastUserText(c))).toEqual(['t1', 't1']);
    expect(agent.context.current).toEqual({ seq: 1, task: 't1' });
  });

  test('a success after retries persists the answer with the attempt count reset', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.llmFails(transient());
    agent.llmBackoffEnds();
    agent.llmAnswers('late but fine');
    expect(agent.value).toBe('persisted');
    expect(agent.context).toMatchObject({ answer: 'late but fine', attempt: 0, nextAttemptAt: null });
  });

  test('maxAttempts counts every call: the third transient failure of three parks the agent in failed', () => {
    const agent = startAgent({ tasks: ['t1'] }, { defaults: { maxAttempts: 3 } });
    agent.llmFails(transient());
    agent.llmBackoffEnds();
    agent.llmFails(transient());
    agent.llmBackoffEnds();
    expect(agent.context.attempt).toBe(3);
    agent.llmFails(transient({ status: 502 }));
    expect(agent.value).toBe('failed');
    expect(agent.calls.llm).toHaveLength(3);
    expect(agent.context.lastError).toEqual({
      kind: 'transient',
      step: 'llm',
      code: 'llm_unavailable',
      message: 'Injected transient failure (HTTP 502).',
      status: 502,
      attempts: 3,
    });
    expect(agent.context.nextAttemptAt).toBeNull();
  });

  test('with maxAttempts 1 a transient error is not retried', () => {
    const agent = startAgent({ tasks: ['t1'], retry: { maxAttempts: 1 } });
    agent.llmFails(transient());
    expect(agent.value).toBe('failed');
    expect(agent.context.lastError).toMatchObject({ kind: 'transient', attempts: 1 });
    expect(agent.calls.sleep).toEqual([]);
  });

  test('a permanent error parks the agent in failed at once, without a retry', () => {
    const agent = startAgent({ tasks: ['t1'] }, { defaults: { maxAttempts: 5 } });
    agent.llmFails(permanent());
    expect(agent.value).toBe('failed');
    expect(agent.calls.llm).toHaveLength(1);
    expect(agent.calls.sleep).toEqual([]);
    expect(agent.context.lastError).toEqual({
      kind: 'permanent',
      step: 'llm',
      code: 'llm_rejected',
      message: 'Injected permanent failure (HTTP 400).',
      status: 400,
      attempts: 1,
    });
    expect(agent.context.answer).toBeNull();
  });

  test('anything thrown that is not a StepError counts as permanent', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.llmFails(new TypeError('cannot read properties of undefined'));
    expect(agent.value).toBe('failed');
    expect(agent.context.lastError).toEqual({
      kind: 'permanent',
      step: 'llm',
      code: 'unexpected_error',
      message: 'cannot read properties of undefined',
      attempts: 1,
    });

    const other = startAgent({ tasks: ['t1'] });
    other.llmFails('a bare string');
    expect(other.value).toBe('failed');
    expect(other.context.lastError).toMatchObject({ kind: 'permanent', message: 'a bare string' });
  });

  test('a plain object shaped like a StepError is judged by its kind', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.llmFails({ kind: 'transient', code: 'llm_timeout', message: 'timed out' });
    expect(agent.value).toEqual({ callingLLM: 'backingOff' });
  });

});

describe('backoff timing', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
  });

  /** Fails the LLM call `count` times with transient errors, recording each backoff's delay. */
  function delaysOf(agent: Agent, count: number, error: () => unknown = () => transient()): number[] {
    const delays: number[] = [];
    for (let i = 0; i < count; i++) {
      agent.llmFails(error());
      expect(agent.value).toEqual({ callingLLM: 'backingOff' });
      delays.push(agent.context.nextAttemptAt! - NOW);
      agent.llmBackoffEnds();
    }
    return delays;
  }

  test('delays grow exponentially, each within [ceiling/2, ceiling] of base·2^(n-1)', () => {
    const agent = startAgent({ tasks: ['t1'] }, { id: 'x', defaults: { maxAttempts: 7, baseDelayMs: 100, maxDelayMs: 100_000 } });
    const delays = delaysOf(agent, 6);
    delays.forEach((delay, i) => {
      const ceiling = 100 * 2 ** i;
      expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
      expect(delay).toBeLessThanOrEqual(ceiling);
    });
    expect(delays).toEqual(expectedDelays('x', 6, { baseDelayMs: 100, maxDelayMs: 100_000 }));
    // Jitter: not every draw lands on the same fraction of its ceiling.
    expect(new Set(delays.map((d, i) => d / (100 * 2 ** i))).size).toBeGreaterThan(1);
  });

  test('delays stop growing at maxDelayMs', () => {
    const agent = startAgent({ tasks: ['t1'] }, { id: 'x', defaults: { maxAttempts: 10, baseDelayMs: 100, maxDelayMs: 400 } });
    const delays = delaysOf(agent, 8);
    for (const delay of delays.slice(2)) {
      expect(delay).toBeGreaterThanOrEqual(200);
      expect(delay).toBeLessThanOrEqual(400);
    }
    expect(delays).toEqual(expectedDelays('x', 8, { baseDelayMs: 100, maxDelayMs: 400 }));
  });

  test('the same agent id draws the same delays; another id draws others', () => {
    const options = { defaults: { maxAttempts: 6, baseDelayMs: 1_000, maxDelayMs: 1_000_000 } };
    const first = delaysOf(startAgent({ tasks: ['t1'] }, { ...options, id: 'agent-a' }), 5);
    const again = delaysOf(startAgent({ tasks: ['t1'] }, { ...options, id: 'agent-a' }), 5);
    const other = delaysOf(startAgent({ tasks: ['t1'] }, { ...options, id: 'agent-b' }), 5);
    expect(again).toEqual(first);
    expect(other).not.toEqual(first);
  });

  test('the PRNG state advances in context with every draw, seeded from the actor id', () => {
    const agent = startAgent({ tasks: ['t1'] }, { id: 'x' });
    expect(agent.context.rng).toBe(seedFrom('x'));
    agent.llmFails(transient());
    expect(agent.context.rng).toBe(nextRandom(seedFrom('x')).state);
  });

  test('a Retry-After longer than the backoff is honoured', () => {
    const agent = startAgent({ tasks: ['t1'] }, { defaults: { baseDelayMs: 100 } });
    agent.llmFails(transient({ status: 429, retryAfterMs: 7_000 }));
    expect(agent.value).toEqual({ callingLLM: 'backingOff' });
    expect(agent.context.nextAttemptAt! - NOW).toBeGreaterThanOrEqual(7_000);
  });

  test('a Retry-After shorter than the backoff leaves the backoff in charge', () => {
    const agent = startAgent({ tasks: ['t1'] }, { id: 'x', defaults: { baseDelayMs: 1_000 } });
    agent.llmFails(transient({ status: 429, retryAfterMs: 0 }));
    expect(agent.context.nextAttemptAt! - NOW).toBe(expectedDelays('x', 1, { baseDelayMs: 1_000, maxDelayMs: 10_000 })[0]);
  });

  test('an absurd Retry-After is capped at five minutes', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.llmFails(transient({ status: 429, retryAfterMs: 24 * 3_600_000 }));
    expect(agent.context.nextAttemptAt! - NOW).toBe(5 * 60_000);
  });
});

describe('side-effect failures', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
  });

  function atEffect(input: AgentInput = {}, options: StartOptions = {}) {
    const agent = startAgent({ tasks: ['t1'], ...input }, options);
    agent.llmAnswers('the answer');
    agent.commitDone();
    expect(agent.value).toEqual({ sideEffect: 'requesting' });
    return agent;
  }

  test('a transient effect error backs off, then runs the effect again with the same seq and body', () => {
    const agent = atEffect({}, { id: 'x' });
    agent.effectFails(transient());
    expect(agent.value).toEqual({ sideEffect: 'backingOff' });
    expect(agent.context.attempt).toBe(1);
    expect(agent.context.nextAttemptAt! - NOW).toBe(expectedDelays('x', 1, DEFAULTS)[0]);
    expect(agent.calls.sleep).toEqual([{ at: agent.context.nextAttemptAt }]);
    agent.effectBackoffEnds();
    expect(agent.value).toEqual({ sideEffect: 'requesting' });
    expect(agent.context.attempt).toBe(2);
    expect(agent.calls.effect).toHaveLength(2);
    expect(agent.calls.effect[1]).toEqual(agent.calls.effect[0]);
    expect(agent.context.answer).toBe('the answer');
    expect(agent.calls.llm).toHaveLength(1);
  });

  test('a retried effect that succeeds completes the task', () => {
    const agent = atEffect();
    agent.effectFails(transient());
    agent.effectBackoffEnds();
    agent.effectDone();
    expect(agent.value).toBe('idle');
    expect(agent.context.progress).toBe(1);
  });

  test('transient effect errors exhaust maxAttempts and park the agent in failed at the effect step', () => {
    const agent = atEffect({ retry: { maxAttempts: 2 } });
    agent.effectFails(transient());
    agent.effectBackoffEnds();
    agent.effectFails(transient());
    expect(agent.value).toBe('failed');
    expect(agent.calls.effect).toHaveLength(2);
    expect(agent.context.lastError).toMatchObject({ kind: 'transient', step: 'effect', attempts: 2 });
    expect(agent.context.answer).toBe('the answer');
  });

  test('a permanent effect error parks the agent in failed at once, answer kept', () => {
    const agent = atEffect();
    agent.effectFails(new StepError('permanent', 'webhook_rejected', 'The webhook answered HTTP 400.', { status: 400 }));
    expect(agent.value).toBe('failed');
    expect(agent.calls.effect).toHaveLength(1);
    expect(agent.context.lastError).toEqual({
      kind: 'permanent',
      step: 'effect',
      code: 'webhook_rejected',
      message: 'The webhook answered HTTP 400.',
      status: 400,
      attempts: 1,
    });
    expect(agent.context.progress).toBe(0);
    expect(agent.context.answer).toBe('the answer');
  });
});

describe('failed', () => {
  test('retry after an LLM failure calls the LLM again for the same task, attempts reset', () => {
    const agent = startAgent({ tasks: ['t1'] }, { defaults: { maxAttempts: 2 } });
    agent.llmFails(transient());
    agent.llmBackoffEnds();
    agent.llmFails(transient());
    expect(agent.value).toBe('failed');
    agent.send({ type: 'retry' });
    expect(agent.value).toEqual({ callingLLM: 'requesting' });
    expect(agent.context).toMatchObject({ attempt: 1, nextAttemptAt: null, current: { seq: 1, task: 't1' }, taken: 1 });
    expect(agent.calls.llm.map((c) => lastUserText(c))).toEqual(['t1', 't1', 't1']);
  });

  test('a retried LLM step gets a fresh budget of maxAttempts calls', () => {
    const agent = startAgent({ tasks: ['t1'] }, { defaults: { maxAttempts: 2 } });
    agent.llmFails(transient());
    agent.llmBackoffEnds();
    agent.llmFails(transient());
    agent.send({ type: 'retry' });
    agent.llmFails(transient());
    expect(agent.value).toEqual({ callingLLM: 'backingOff' });
    agent.llmBackoffEnds();
    agent.llmFails(transient());
    expect(agent.value).toBe('failed');
    expect(agent.calls.llm).toHaveLength(4);
  });

  test('retry after an effect failure runs the effect again without calling the LLM', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.llmAnswers('the answer');
    agent.commitDone();
    agent.effectFails(permanent());
    agent.send({ type: 'retry' });
    expect(agent.value).toEqual({ sideEffect: 'requesting' });
    expect(agent.context).toMatchObject({ attempt: 1, answer: 'the answer', current: { seq: 1, task: 't1' } });
    expect(agent.calls.llm).toHaveLength(1);
    expect(agent.calls.effect).toHaveLength(2);
    expect(agent.calls.effect[1]).toEqual(agent.calls.effect[0]);
    agent.effectDone();
    expect(agent.value).toBe('idle');
    expect(agent.context.progress).toBe(1);
  });

  test('task.skip drops the current task and returns to idle, progress unchanged', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.completeTask();
    agent.send({ type: 'task.add', task: 'doomed' });
    agent.llmFails(permanent());
    agent.send({ type: 'task.skip' });
    expect(agent.value).toBe('idle');
    expect(agent.context).toMatchObject({ current: null, answer: null, attempt: 0, lastError: null, progress: 1, skipped: 1, taken: 2 });
  });

  test('task.skip after an effect failure drops the answer too', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.llmAnswers('the answer');
    agent.commitDone();
    agent.effectFails(permanent());
    agent.send({ type: 'task.skip' });
    expect(agent.value).toBe('idle');
    expect(agent.context).toMatchObject({ current: null, answer: null, progress: 0, skipped: 1 });
  });

  test('task.skip moves on to the next queued task with the next seq', () => {
    const agent = startAgent({ tasks: ['doomed', 'fine'] });
    agent.llmFails(permanent());
    agent.send({ type: 'task.skip' });
    expect(agent.value).toEqual({ callingLLM: 'requesting' });
    expect(agent.context).toMatchObject({ current: { seq: 2, task: 'fine' }, queue: [], skipped: 1, progress: 0, lastError: null });
    expect(agent.calls.llm.map((c) => lastUserText(c))).toEqual(['doomed', 'fine']);
  });
});

describe('finish', () => {
  test('finish from idle ends the agent in the final state done', () => {
    const agent = startAgent({ tasks: ['t1'] });
    agent.completeTask();
    agent.send({ type: 'finish' });
    expect(agent.value).toBe('done');
    expect(agent.snapshot.status).toBe('done');
    expect(agent.context.progress).toBe(1);
  });

  test('a finished agent accepts nothing more', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const agent = startAgent();
    agent.send({ type: 'finish' });
    const before = agent.snapshot;
    agent.send({ type: 'task.add', task: 'too late' });
    agent.send({ type: 'retry' });
    expect(agent.snapshot).toBe(before);
    expect(agent.calls.llm).toEqual([]);
    warn.mockRestore();
  });
});

describe('events outside the states that handle them are ignored', () => {
  const unchanged = (agent: Agent, event: AgentEvent) => {
    const before = agent.snapshot;
    const calls = { llm: agent.calls.llm.length, effect: agent.calls.effect.length };
    agent.send(event);
    expect(agent.value).toEqual(before.value);
    expect(agent.context).toEqual(before.context);
    expect(agent.snapshot.status).toBe('active');
    expect({ llm: agent.calls.llm.length, effect: agent.calls.effect.length }).toEqual(calls);
  };

  test.each(STATES.filter((s) => s.name !== 'idle').map((s) => s.name))('finish is ignored in %s', (name) => {
    unchanged(agentIn(name), { type: 'finish' });
  });

  test.each(STATES.filter((s) => s.value !== 'failed').map((s) => s.name))('retry and task.skip are ignored in %s', (name) => {
    const agent = agentIn(name);
    unchanged(agent, { type: 'retry' });
    unchanged(agent, { type: 'task.skip' });
  });
});

describe('invariants over a long random walk', () => {
  test('progress never goes down and every added task is queued, current, completed or skipped', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
    let rng = seedFrom('walk');
    const pick = <T>(items: readonly T[]): T => {
      const next = nextRandom(rng);
      rng = next.state;
      return items[Math.floor(next.value * items.length)]!;
    };
    const agent = startAgent({ tasks: ['t0'] }, { defaults: { maxAttempts: 3 } });
    let added = 1;
    let completedEffects = 0;
    let lastProgress = 0;
    const seen = new Set<string>();
    // Actor events only for actors that are running: XState turns an unhandled error event into an actor error.
    const whileRunning = (id: string, deliver: () => void) => () => {
      if (id in agent.snapshot.children) deliver();
    };
    const moves: (() => void)[] = [
      () => {
        // Seldom, and only onto an empty queue, so the walk also drains it and rests in idle.
        if (agent.context.queue.length === 0 && pick([true, false, false, false])) agent.send({ type: 'task.add', task: `t${added++}` });
      },
      () => agent.send({ type: 'retry' }),
      () => agent.send({ type: 'task.skip' }),
      whileRunning('llm', () => agent.llmAnswers('a')),
      whileRunning('llm', () => agent.llmFails(transient())),
      whileRunning('llm', () => agent.llmFails(permanent())),
      whileRunning('llmBackoff', () => agent.llmBackoffEnds()),
      () => agent.snapshot.hasTag(AWAIT_COMMIT_TAG) && agent.commitDone(),
      whileRunning('effect', () => (completedEffects++, agent.effectDone())),
      whileRunning('effect', () => agent.effectFails(transient())),
      whileRunning('effect', () => agent.effectFails(permanent())),
      whileRunning('effectBackoff', () => agent.effectBackoffEnds()),
    ];
    for (let step = 0; step < 3_000; step++) {
      pick(moves)();
      const ctx = agent.context;
      seen.add(JSON.stringify(agent.value));
      expect(ctx.progress).toBeGreaterThanOrEqual(lastProgress);
      lastProgress = ctx.progress;
      expect(ctx.progress).toBe(completedEffects);
      expect(ctx.progress + ctx.skipped + (ctx.current ? 1 : 0) + ctx.queue.length).toBe(added);
      expect(ctx.taken).toBe(ctx.progress + ctx.skipped + (ctx.current ? 1 : 0));
      if (ctx.current) expect(ctx.current.seq).toBe(ctx.taken);
      expect(ctx.attempt).toBeLessThanOrEqual(ctx.retry.maxAttempts);
    }
    // The walk went everywhere but done (finish is not among its moves).
    expect(seen.size).toBe(7);
    expect(lastProgress).toBeGreaterThan(10);
  });
});
