import { describe, expect, it } from 'vitest';
import { createSimulatedLlm } from '../../../src/index.js';
import { pathTests } from '../../../src/testing/index.js';
import { digestDefinition } from './digest-machine.js';

// The actors are replaced by controlled stand-ins: the dependencies are never called here.
const definition = digestDefinition({ llm: createSimulatedLlm(), deliver: () => Promise.reject(new Error('not in path tests')) });

const suite = pathTests({
  machine: definition,
  events: [{ type: 'schedule', topic: 'Release notes', sendAt: 1_900_000_000_000 }, { type: 'retry' }, { type: 'cancel' }],
  outcomes: {
    draft: { done: ['Five lines on the release.'], error: [new Error('The model is down.')] },
    deliver: { done: [{ messageId: 'm-1' }], error: [new Error('The mail server is down.')] },
  },
});

describe(suite.name, () => {
  it('takes every state and transition', () => {
    expect(suite.coverage.states.missing).toEqual([]);
    expect(suite.coverage.transitions.missing).toEqual([]);
  });
  for (const path of suite.paths) it(path.name, () => path.run());
  for (const c of suite.crashCases) it(c.name, () => c.run());
});
