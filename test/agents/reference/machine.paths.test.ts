// Path tests generated from the reference statechart (xstate/graph), each run on the real runtime
// over a real SQLite file, then again with a crash and a restore after every step.
import { describe, expect, it } from 'vitest';
import { agentMachine } from '../../../src/agents/reference/machine.js';
import type { ToolsRequest } from '../../../src/agents/reference/types.js';
import { agentPathTestOptions, pathTests, type PathRunResult, type PathTestCase } from '../../../src/testing/index.js';

const suite = pathTests(agentPathTestOptions());

describe('agent statechart: generated paths', () => {
  it('derives the done/error events of every invoke from the machine', () => {
    expect(suite.invokes.map((i) => `${i.id}:${i.src}`)).toEqual([
      'llm:callLlm',
      'llmBackoff:sleepUntil',
      'tools:runTools',
      'toolsBackoff:sleepUntil',
      'effect:runSideEffect',
      'effectBackoff:sleepUntil',
    ]);
    expect(new Set(suite.events.map((e) => e.type).filter((t) => t.startsWith('xstate.')))).toEqual(
      new Set([
        'xstate.done.actor.llm',
        'xstate.error.actor.llm',
        'xstate.done.actor.llmBackoff',
        'xstate.error.actor.llmBackoff',
        'xstate.done.actor.tools',
        'xstate.error.actor.tools',
        'xstate.done.actor.toolsBackoff',
        'xstate.error.actor.toolsBackoff',
        'xstate.done.actor.effect',
        'xstate.error.actor.effect',
        'xstate.done.actor.effectBackoff',
        'xstate.error.actor.effectBackoff',
        // Time passes: the agent tools' time limit.
        'xstate.after.agentCallsTimeout.agent.sideEffect.awaitingAgents',
      ]),
    );
  });

  it('covers every state and every transition of the definition', () => {
    // `all` is read from the machine's definition, not from the paths: a transition no path takes is listed in `missing`.
    expect(suite.coverage.states.all).toEqual(expect.arrayContaining(Object.keys(agentMachine.root.states).map((s) => `agent.${s}`)));
    expect(suite.coverage.transitions.all).toEqual(
      expect.arrayContaining([
        'agent: task.add → (no target)',
        'agent.idle: always [hasQueuedTask] → agent.callingLLM',
        'agent.sideEffect.requesting: xstate.done.actor.effect → agent.idle',
        'agent.failed: retry #2 → agent.sideEffect',
        'agent.failed: task.skip → agent.idle',
        'agent.sideEffect.awaitingApproval: tool.approve [isPendingCall] → agent.sideEffect.routing',
        'agent.sideEffect.runningTools: xstate.done.actor.tools → agent.sideEffect.awaitingAgents',
        'agent.sideEffect.awaitingAgents: always #1 [callsAnsweredTurnsLeft] → agent.callingLLM',
        'agent.sideEffect.awaitingAgents: always #2 [callsAnswered] → agent.failed',
        'agent: agent.response [isAwaitedChild] → (no target)',
      ]),
    );
    expect(suite.coverage.states.missing).toEqual([]);
    // The budget's three transitions need a budget in the input and `budget.raise` among the events,
    // which would triple this suite: test/agents/reference/budget.paths.test.ts covers them.
    expect(suite.coverage.transitions.missing).toEqual([
      'agent: budget.raise [hasBudget] → (no target)',
      'agent.callingLLM: always [overBudget] → agent.failed',
      'agent.failed: budget.raise [failedOnBudget] → agent.callingLLM',
    ]);
  });

  for (const path of suite.paths) {
    it(path.name, async () => {
      const result = await path.run();
      expect(result.checkpoints).toBe(path.steps.length);
    });
  }
});

describe('agent statechart: a crash after every step of every path changes nothing', () => {
  const llmInputs = (run: PathRunResult, incarnation?: number) =>
    run.starts.filter((s) => s.src === 'callLlm' && (incarnation === undefined || s.incarnation === incarnation)).map((s) => s.input);
  const effectKeys = (run: PathRunResult) =>
    [...new Set(run.starts.filter((s) => s.src === 'runSideEffect').map((s) => `path-agent:${(s.input as { seq: number }).seq}`))].sort();
  // Each tool call's key with the name and arguments it was started with (guarantee 3: one of each per key).
  const toolCalls = (run: PathRunResult) =>
    [
      ...new Set(
        run.starts
          .filter((s) => s.src === 'runTools')
          .flatMap((s) => (s.input as ToolsRequest).calls.map((call) => `path-agent:${(s.input as ToolsRequest).seq}:${call.id} ${call.name} ${call.arguments}`)),
      ),
    ].sort();

  for (const c of suite.crashCases) {
    it(c.name, async () => {
      const { reference, crashed } = await c.run();
      // The LLM is asked again only for the call in flight at the crash; a task whose answer was
      // persisted is never asked again, and every later call is one the uninterrupted run made too.
      const inFlight = JSON.stringify(c.path.steps[c.crashAfter]!.state) === JSON.stringify({ callingLLM: 'requesting' });
      const before = llmInputs(crashed, 1);
      const after = llmInputs(crashed, 2);
      if (inFlight) expect(after[0]).toEqual(before.at(-1));
      expect([...before, ...after.slice(inFlight ? 1 : 0)]).toEqual(llmInputs(reference));
      expect(effectKeys(crashed)).toEqual(effectKeys(reference));
      expect(toolCalls(crashed)).toEqual(toolCalls(reference));
      expect(crashed.state).toEqual(reference.state);
    });
  }
});

// An agent spawned with `finishAfterTasks` (an agent tool's child): the same chart, but a completed
// or skipped task with nothing queued ends it in `done` (it raises `finish` to itself: no
// transition of its own, so the suite above covers the chart). The shortest path that ends so by a
// completed task and the one by a skipped task (220 of the generated crash cases end in one of the
// two ways; these two paths keep the suite's time), each with a crash after every step. With agent
// tools, on the runtime: test/runtime/child-agents.test.ts.
describe('agent statechart with finishAfterTasks: paths that finish after a task, with a crash after every step', () => {
  const options = agentPathTestOptions();
  const finishing = pathTests({ ...options, input: { ...(options.input as object), finishAfterTasks: true }, simplePathDepth: 0 });
  const endsBy = (type: string) => (path: PathTestCase) => path.steps.at(-1)!.status === 'done' && path.steps.at(-1)!.event.type === type;
  const shortest = (matches: (path: PathTestCase) => boolean) => finishing.paths.filter(matches).sort((a, b) => a.steps.length - b.steps.length)[0]!;
  const chosen = [shortest(endsBy('task.skip')), shortest(endsBy('xstate.done.actor.effect'))];

  it('finds both paths', () => {
    expect(chosen.every((path) => path !== undefined && path.steps.at(-1)!.state === 'done')).toBe(true);
  });

  for (const c of finishing.crashCases.filter((crash) => chosen.includes(crash.path))) {
    it(c.name, async () => {
      const { reference, crashed } = await c.run();
      // run() has compared the two (state, context, actions, effects, actor starts); both ended.
      expect([reference.status, crashed.status]).toEqual(['done', 'done']);
      expect(crashed.state).toBe('done');
    });
  }
});
