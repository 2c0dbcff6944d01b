// A supervisor, as docs/machines.md shows it: it fans a question out to three child `agent`s (each
// with its own point of view), waits for their answers with a deadline (a durable `after`), and
// answers from what came back. Everything durable is the runtime's: the children are spawned with
// the checkpoint that enters `waiting`, their answers come into this agent's inbox, and the deadline
// keeps its absolute time across crashes, passivation and takeover.
import { assign, setup } from 'xstate';
import { z } from 'zod';
import { spawnAgent, type ChildEvent, type MachineDefinition } from '../../../src/index.js';

// #region chart

/** The three points of view; each child is a reference `agent` with one of them as its system prompt. */
export const PERSPECTIVES = ['a skeptic', 'an optimist', 'a historian'] as const;

export interface SupervisorInput {
  question: string;
  /** How long to wait for the children's answers (default 60 s); then it answers from those in. */
  deadlineMs?: number;
}

export interface SupervisorContext {
  question: string;
  /** The children's ids, one per point of view. */
  workers: string[];
  deadlineMs: number;
  /** The children's answers by child id (null: the child failed). */
  answers: Record<string, string | null>;
}

export interface SupervisorOutput {
  answer: string;
  /** How many children answered in time, of `PERSPECTIVES.length`. */
  answered: number;
}

/** Child i's id: derived from the supervisor's, so a re-run of the spawning transition names the same child. */
export const workerId = (supervisorId: string, i: number) => `${supervisorId}:w${i}`;

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    input: {} as SupervisorInput,
    events: {} as ChildEvent,
    output: {} as SupervisorOutput,
  },
  guards: {
    fromNewWorker: ({ context, event }) => context.workers.includes(event.agentId) && !(event.agentId in context.answers),
    allIn: ({ context }) => Object.keys(context.answers).length === PERSPECTIVES.length,
  },
  delays: { answerDeadline: ({ context }) => context.deadlineMs },
}).createMachine({
  id: 'supervisor',
  version: '1',
  context: ({ input, self }) => ({
    question: input.question,
    workers: PERSPECTIVES.map((_, i) => workerId(self.id, i)),
    deadlineMs: input.deadlineMs ?? 60_000,
    answers: {},
  }),
  initial: 'waiting',
  states: {
    waiting: {
      // One child per point of view, created with this state's checkpoint.
      entry: PERSPECTIVES.map((perspective, i) =>
        spawnAgent('agent', {
          id: ({ context }: { context: SupervisorContext }) => context.workers[i]!,
          input: ({ context }: { context: SupervisorContext }) => ({ system: `Answer as ${perspective}, in two sentences.`, tasks: [context.question] }),
        }),
      ),
      always: { guard: 'allIn', target: 'answered' },
      after: { answerDeadline: 'answered' },
      on: {
        'agent.response': {
          guard: 'fromNewWorker',
          actions: assign({ answers: ({ context, event }) => ({ ...context.answers, [event.agentId]: event.type === 'agent.response' ? event.response : null }) }),
        },
        'agent.failed': {
          guard: 'fromNewWorker',
          actions: assign({ answers: ({ context, event }) => ({ ...context.answers, [event.agentId]: null }) }),
        },
      },
    },
    answered: { type: 'final' },
  },
  output: ({ context }) => {
    const lines = PERSPECTIVES.flatMap((perspective, i) => {
      const answer = context.answers[context.workers[i]!];
      return typeof answer === 'string' ? [`As ${perspective}: ${answer}`] : [];
    });
    return { answer: lines.length > 0 ? lines.join('\n') : 'No answer came back in time.', answered: lines.length };
  },
});

export const supervisorDefinition: MachineDefinition = {
  name: 'supervisor',
  version: '1',
  machine: supervisorMachine,
  input: z.object({ question: z.string().min(1), deadlineMs: z.number().int().positive().optional() }),
};
// #endregion
