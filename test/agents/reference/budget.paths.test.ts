// Path tests of the budget's transitions (input `budget`, event `budget.raise`), on the real runtime
// over a real SQLite file, each with a crash and a restore after every step.
//
// Not in machine.paths.test.ts: a budget there (input and event) takes its suite from 397 paths and
// 3,628 crash cases to 854–1,299 paths and 9,886–13,480 crash cases (measured), for three
// transitions. So that suite keeps its input and events and leaves exactly these three to this one,
// which explores the same chart with a budget and runs the shortest path to each budget step. (A
// `retry` that parks the agent again, or a raise under the limit, changes no state the paths tell
// apart: test/agents/reference/budget.test.ts has them.)
import { describe, expect, it } from 'vitest';
import { agentPathTestOptions, pathTests, type PathTestCase } from '../../../src/testing/index.js';

const BUDGET_TRANSITIONS = [
  'agent: budget.raise [hasBudget] → (no target)',
  'agent.callingLLM: always [overBudget] → agent.failed',
  'agent.failed: budget.raise [failedOnBudget] → agent.callingLLM',
];

const options = agentPathTestOptions();
// 15 tokens: the first answer (15 or 20 tokens) reaches it; the raise (to 1000) ends it for good.
const suite = pathTests({
  ...options,
  input: { ...(options.input as object), budget: { maxTotalTokens: 15 } },
  events: [...options.events, { type: 'budget.raise', maxTotalTokens: 1000 }],
  simplePathDepth: 0,
});

interface Key {
  overBudget: boolean;
  onBudget: boolean;
}
const keyOf = (path: PathTestCase, i: number) => JSON.parse(path.steps[i]!.key) as Key;
/** The shortest path with a step `i` for which `matches` holds, cut after that step. */
function shortest(matches: (path: PathTestCase, i: number) => boolean): PathTestCase | undefined {
  const found = suite.paths
    .map((path) => ({ path, at: path.steps.findIndex((_, i) => i > 0 && matches(path, i)) }))
    .filter(({ at }) => at > 0)
    .sort((a, b) => a.at - b.at);
  return found[0]?.path;
}

const parkedOnBudget = (path: PathTestCase, i: number) => path.steps[i]!.state === 'failed' && keyOf(path, i).onBudget;
const cases = {
  // A task's first call: the task is taken from the queue, and the agent parks instead of calling.
  'a task over budget parks before its first call': shortest((p, i) => parkedOnBudget(p, i) && !keyOf(p, i - 1).onBudget && p.steps[i]!.event.type === 'task.add'),
  // A follow-up turn: the tool results are in, and the next call is not made.
  'the turn after tool results parks over budget': shortest((p, i) => parkedOnBudget(p, i) && p.steps[i]!.event.type === 'xstate.done.actor.tools'),
  'budget.raise in failed on its budget calls the LLM': shortest(
    (p, i) => p.steps[i]!.event.type === 'budget.raise' && keyOf(p, i - 1).onBudget && p.steps[i - 1]!.state === 'failed' && JSON.stringify(p.steps[i]!.state) === '{"callingLLM":"requesting"}',
  ),
  // While the answer that went over is committed and its webhook runs: the next task's call is made.
  'budget.raise while working raises for later': shortest(
    (p, i) => p.steps[i]!.event.type === 'budget.raise' && p.steps[i - 1]!.state !== 'failed' && keyOf(p, i - 1).overBudget && !keyOf(p, i).overBudget,
  ),
};

describe('agent statechart with a budget: generated paths', () => {
  it('the suite covers every transition, the budget ones included', () => {
    expect(suite.coverage.transitions.covered).toEqual(expect.arrayContaining(BUDGET_TRANSITIONS));
    expect(suite.coverage.transitions.missing).toEqual([]);
  });

  it('finds a path for each budget step', () => {
    for (const [name, path] of Object.entries(cases)) expect(path, name).toBeDefined();
  });

  for (const [name, path] of Object.entries(cases)) {
    if (!path) continue;
    describe(`${name}: ${path.name}`, () => {
      it('runs on the runtime', async () => {
        const result = await path.run();
        expect(result.checkpoints).toBe(path.steps.length);
      });
      for (const c of suite.crashCases.filter((crash) => crash.path === path)) {
        it(c.name, async () => {
          // run() compares the crashed run with the uninterrupted one: state, context, actions, effects, actor starts.
          const { reference, crashed } = await c.run();
          expect(crashed.state).toEqual(reference.state);
        });
      }
    });
  }
});
