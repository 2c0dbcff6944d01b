import { describe, expect, it } from 'vitest';
import { pathTests } from '../../../src/testing/index.js';
import { supervisorDefinition, type SupervisorContext } from './supervisor-machine.js';

const suite = pathTests({
  machine: supervisorDefinition,
  input: { question: 'Will it rain tomorrow?' },
  events: [], // everything it takes comes from its children or from the clock
  // What each `agent` it spawns may report: an answer, or a failure (one event each, per child).
  children: {
    agent: {
      response: [{ seq: 1, task: 'Will it rain tomorrow?', response: 'Perhaps.' }],
      failed: [{ message: 'The model is down.' }],
    },
  },
  // The guards read who answered, but any one child is like another: count answers and failures.
  serializeState: ({ value, status, context }) => {
    const answers = Object.values((context as SupervisorContext).answers);
    return JSON.stringify({ value, status, answered: answers.filter((a) => a !== null).length, failed: answers.filter((a) => a === null).length });
  },
});

describe(suite.name, () => {
  it('takes every state and transition, the deadline included', () => {
    expect(suite.coverage.states.missing).toEqual([]);
    expect(suite.coverage.transitions.missing).toEqual([]);
    expect(suite.coverage.transitions.all).toContain('supervisor.waiting: after answerDeadline → supervisor.answered');
  });
  it('spawns its three children on entering waiting, and only then', () => {
    expect(suite.spawned.map((child) => child.id)).toEqual(['path-agent:w0', 'path-agent:w1', 'path-agent:w2']);
    for (const path of suite.paths) expect(path.steps.map((step) => step.spawns.length)).toEqual([3, ...path.steps.slice(1).map(() => 0)]);
  });
  for (const path of suite.paths) it(path.name, () => path.run());
  for (const c of suite.crashCases) it(c.name, () => c.run());
});
