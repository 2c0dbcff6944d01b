// A machine of your own, as docs/machines.md shows it: an LLM drafts a digest on a topic, the draft
// is committed, the agent waits durably until the time it was asked for, then delivers the digest
// once. The regions are the blocks of docs/machines.md, compared byte for byte by test/docs/docs.test.ts.
// #region imports
import { assign, fromPromise, setup } from 'xstate';
import { z } from 'zod';
import {
  AWAIT_COMMIT_TAG,
  COMMITTED_EVENT,
  currentAgent,
  sleepUntil,
  type LlmClient,
  type LlmRequest,
  type MachineDefinition,
  type SnapshotUpgrade,
} from '../../../src/index.js';
// #endregion

// #region chart
export interface DigestContext {
  topic: string | null;
  /** Epoch ms: absolute and in the checkpoint, so a restored agent waits only what is left. */
  sendAt: number | null;
  draft: string | null;
  messageId: string | null;
  error: string | null;
}

export type DigestEvent =
  | { type: 'schedule'; topic: string; sendAt: number }
  | { type: 'retry' }
  | { type: 'cancel' }
  | { type: typeof COMMITTED_EVENT };

export interface Delivery {
  topic: string;
  text: string;
}

const bound = (src: string) => () => Promise.reject(new Error(`"${src}" is bound in digestDefinition().`));
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

export const digestMachine = setup({
  types: { context: {} as DigestContext, events: {} as DigestEvent },
  // By name: a checkpoint stores a running child by its src, and a restore looks that name up here.
  actors: {
    writeDraft: fromPromise<string, LlmRequest>(bound('writeDraft')),
    sleepUntil: fromPromise<void, { at: number }>(bound('sleepUntil')),
    deliver: fromPromise<{ messageId: string }, Delivery>(bound('deliver')),
  },
  guards: { hasDraft: ({ context }) => context.draft !== null },
}).createMachine({
  id: 'digest',
  version: '2',
  context: { topic: null, sendAt: null, draft: null, messageId: null, error: null },
  initial: 'idle',
  states: {
    idle: {
      on: { schedule: { target: 'drafting', actions: assign(({ event }) => ({ topic: event.topic, sendAt: event.sendAt })) } },
    },
    drafting: {
      invoke: {
        id: 'draft',
        src: 'writeDraft',
        input: ({ context }) => ({
          model: 'gpt-4o-mini',
          messages: [
            { role: 'system' as const, content: 'Write a five-line digest.' },
            { role: 'user' as const, content: context.topic ?? '' },
          ],
          timeoutMs: 30_000,
        }),
        onDone: { target: 'drafted', actions: assign({ draft: ({ event }) => event.output }) },
        onError: { target: 'failed', actions: assign({ error: ({ event }) => messageOf(event.error) }) },
      },
    },
    // A commit barrier: left only once the checkpoint holding the draft is durable.
    drafted: { tags: [AWAIT_COMMIT_TAG], on: { [COMMITTED_EVENT]: 'waiting' } },
    waiting: {
      // Until an absolute time the event gave: an invoked timer (an `after` counts from entering the state).
      invoke: {
        id: 'wait', src: 'sleepUntil', input: ({ context }) => ({ at: context.sendAt ?? 0 }), onDone: 'delivering',
        onError: { target: 'failed', actions: assign({ error: ({ event }) => messageOf(event.error) }) },
      },
      on: { cancel: 'cancelled' },
    },
    delivering: {
      invoke: {
        id: 'deliver',
        src: 'deliver',
        input: ({ context }) => ({ topic: context.topic ?? '', text: context.draft ?? '' }),
        onDone: { target: 'delivered', actions: assign({ messageId: ({ event }) => event.output.messageId }) },
        onError: { target: 'failed', actions: assign({ error: ({ event }) => messageOf(event.error) }) },
      },
    },
    failed: {
      on: {
        retry: [
          { guard: 'hasDraft', target: 'delivering', actions: assign({ error: null }) },
          { target: 'drafting', actions: assign({ error: null }) },
        ],
        cancel: 'cancelled',
      },
    },
    delivered: { type: 'final' },
    cancelled: { type: 'final' },
  },
});
// #endregion

// #region upgrades
/** Version 1 of this chart named the deadline `at`: its checkpoints restore as version 2 through this. */
export const digestUpgrades: Record<string, SnapshotUpgrade> = {
  '1': (snapshot) => {
    const { at, ...context } = snapshot.context as { at: number | null };
    return { ...snapshot, context: { ...context, sendAt: at } };
  },
};
// #endregion

// #region definition
export interface DigestDependencies {
  llm: LlmClient;
  /** Sends a digest (a mail, a chat message…); a re-run after a crash sends the same key. */
  deliver: (delivery: Delivery & { idempotencyKey: string }, signal: AbortSignal) => Promise<{ messageId: string }>;
}

const digestKey = (agentId: string) => `${agentId}:digest`;

/** The chart bound to real I/O, as given to `createRuntime({ machines: [...] })`. */
export function digestDefinition({ llm, deliver }: DigestDependencies): MachineDefinition {
  const machine = digestMachine.provide({
    actors: {
      writeDraft: fromPromise<string, LlmRequest>(async ({ input, signal }) => (await llm.complete(input, signal)).content ?? ''),
      sleepUntil: fromPromise<void, { at: number }>(({ input, signal }) => sleepUntil(input.at, signal)),
      deliver: fromPromise<{ messageId: string }, Delivery>(async ({ input, signal, system }) => {
        // Once per key: a re-run finds the recorded result, or (crashed before the record) sends the same key.
        const agent = currentAgent(system);
        const idempotencyKey = digestKey(agent.agentId);
        const recorded = await agent.findEffect(idempotencyKey);
        if (recorded) return recorded.result as { messageId: string };
        const result = await deliver({ ...input, idempotencyKey }, signal);
        agent.recordEffect(idempotencyKey, 1, result);
        return result;
      }),
    },
  });
  return {
    name: 'digest',
    machine,
    upgrades: digestUpgrades,
    events: {
      schedule: z.object({ type: z.literal('schedule'), topic: z.string().min(1).max(200), sendAt: z.number().int().min(0) }).strict(),
      retry: z.object({ type: z.literal('retry') }).strict(),
      cancel: z.object({ type: z.literal('cancel') }).strict(),
    },
    // What each actor is, by src: metrics, traces and the dashboard read this, never the names.
    actors: {
      writeDraft: { kind: 'llm' },
      deliver: { kind: 'effect', idempotencyKey: ({ agentId }) => digestKey(agentId) },
      sleepUntil: { kind: 'wait' },
    },
  };
}
// #endregion
