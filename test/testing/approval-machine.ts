// A small approval workflow, to show the path-test helper is not tied to `agent`: a guard (small
// requests are approved at once), an invoked actor (`notify` tells the approver), and a wait for a
// person's decision (`approve` / `reject`), with reminders (a bounded loop) and a retry after a
// failed notification.
import { assign, fromPromise, setup } from 'xstate';
import { z } from 'zod';
import type { MachineDefinition } from '../../src/durable/definition.js';

export interface ApprovalRequest {
  title: string;
  amount: number;
}

export interface ApprovalContext {
  approver: string;
  autoApproveBelow: number;
  request: ApprovalRequest | null;
  reminders: number;
  decision: { by: string; approved: boolean; reason?: string } | null;
  lastError: string | null;
}

export type ApprovalEvent =
  | ({ type: 'submit' } & ApprovalRequest)
  | { type: 'approve'; by: string }
  | { type: 'reject'; by: string; reason: string }
  | { type: 'remind' }
  | { type: 'retry' }
  | { type: 'cancel' };

export interface NotifyInput {
  to: string;
  title: string;
  reminder: number;
}

export const approvalMachine = setup({
  types: {
    context: {} as ApprovalContext,
    events: {} as ApprovalEvent,
    input: {} as { approver: string; autoApproveBelow?: number },
  },
  actors: {
    // Bound by whoever registers the machine (a mail or chat message in real life).
    notify: fromPromise<{ messageId: string }, NotifyInput>(() => Promise.reject(new Error('notify is not bound'))),
  },
  guards: {
    isSmall: ({ context, event }) => event.type === 'submit' && event.amount < context.autoApproveBelow,
    mayRemind: ({ context }) => context.reminders < 2,
    notTheRequester: ({ event }) => event.type !== 'approve' || event.by !== 'requester',
  },
}).createMachine({
  id: 'approval',
  version: '1',
  context: ({ input }) => ({
    approver: input.approver,
    autoApproveBelow: input.autoApproveBelow ?? 100,
    request: null,
    reminders: 0,
    decision: null,
    lastError: null,
  }),
  initial: 'draft',
  states: {
    draft: {
      on: {
        submit: [
          {
            guard: 'isSmall',
            target: 'approved',
            actions: assign({
              request: ({ event }) => ({ title: event.title, amount: event.amount }),
              decision: { by: 'policy', approved: true },
            }),
          },
          { target: 'notifying', actions: assign({ request: ({ event }) => ({ title: event.title, amount: event.amount }) }) },
        ],
        cancel: 'cancelled',
      },
    },
    notifying: {
      invoke: {
        id: 'notify',
        src: 'notify',
        input: ({ context }) => ({ to: context.approver, title: context.request?.title ?? '', reminder: context.reminders }),
        onDone: 'awaitingDecision',
        onError: {
          target: 'notifyFailed',
          actions: assign({ lastError: ({ event }) => (event.error instanceof Error ? event.error.message : String(event.error)) }),
        },
      },
    },
    notifyFailed: {
      on: {
        retry: { target: 'notifying', actions: assign({ lastError: null }) },
        cancel: 'cancelled',
      },
    },
    awaitingDecision: {
      on: {
        approve: {
          guard: 'notTheRequester',
          target: 'approved',
          actions: assign({ decision: ({ event }) => ({ by: event.by, approved: true }) }),
        },
        reject: {
          target: 'rejected',
          actions: assign({ decision: ({ event }) => ({ by: event.by, approved: false, reason: event.reason }) }),
        },
        remind: { guard: 'mayRemind', target: 'notifying', actions: assign({ reminders: ({ context }) => context.reminders + 1 }) },
        cancel: 'cancelled',
      },
    },
    approved: { type: 'final' },
    rejected: { type: 'final' },
    cancelled: { type: 'final' },
  },
});

const by = z.string().min(1).max(100);

/** Its registration, as a user would write it for `createRuntime({ machines: [...] })`. */
export const approvalDefinition: MachineDefinition = {
  name: 'approval',
  machine: approvalMachine,
  input: z.object({ approver: by, autoApproveBelow: z.number().int().min(0).optional() }).strict(),
  events: {
    submit: z.object({ type: z.literal('submit'), title: z.string().min(1), amount: z.number().int().min(0) }).strict(),
    approve: z.object({ type: z.literal('approve'), by }).strict(),
    reject: z.object({ type: z.literal('reject'), by, reason: z.string().min(1) }).strict(),
    remind: z.object({ type: z.literal('remind') }).strict(),
    retry: z.object({ type: z.literal('retry') }).strict(),
    cancel: z.object({ type: z.literal('cancel') }).strict(),
  },
};
