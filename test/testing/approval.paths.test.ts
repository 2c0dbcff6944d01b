// The path-test helper on a machine that is not `agent`, written as a user would write it.
import { describe, expect, it } from 'vitest';
import { pathTests } from '../../src/testing/index.js';
import { approvalDefinition } from './approval-machine.js';

const suite = pathTests({
  machine: approvalDefinition,
  input: { approver: 'ana' },
  events: [
    { type: 'submit', title: 'New laptop', amount: 1500 },
    { type: 'submit', title: 'Coffee beans', amount: 20 },
    { type: 'approve', by: 'ana' },
    { type: 'approve', by: 'requester' },
    { type: 'reject', by: 'ana', reason: 'Over budget' },
    { type: 'remind' },
    { type: 'retry' },
    { type: 'cancel' },
  ],
  outcomes: { notify: { done: [{ messageId: 'm-1' }], error: [new Error('The mail server is down.')] } },
});

describe('approval workflow: generated paths', () => {
  it('covers every state and every transition of the definition', () => {
    expect(suite.coverage.states.missing).toEqual([]);
    expect(suite.coverage.transitions.missing).toEqual([]);
    expect(suite.coverage.transitions.all).toContain('approval.awaitingDecision: remind [mayRemind] → approval.notifying');
  });

  it('evaluates the guards on the payload samples: both submit branches, at most two reminders, no self-approval', () => {
    const steps = suite.paths.flatMap((p) => p.steps.map((s, i) => ({ s, before: p.steps[i - 1] })));
    const after = (amount: number) => new Set(steps.filter(({ s }) => s.event.type === 'submit' && s.event.amount === amount).map(({ s }) => s.state));
    expect(after(20)).toEqual(new Set(['approved'])); // isSmall
    expect(after(1500)).toEqual(new Set(['notifying']));
    const reminders = suite.paths.map((p) => p.steps.filter((s) => s.event.type === 'remind').length);
    expect(Math.max(...reminders)).toBe(2); // mayRemind refuses the third
    expect(steps.some(({ s }) => s.event.type === 'approve' && s.event.by === 'requester')).toBe(false); // notTheRequester
    expect(new Set(suite.paths.map((p) => p.steps.at(-1)!.status))).toEqual(new Set(['active', 'done']));
  });

  for (const path of suite.paths) it(path.name, () => path.run());
  for (const c of suite.crashCases) it(c.name, () => c.run());
});
