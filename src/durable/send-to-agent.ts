/**
 * Messages between agents: `sendToAgent(to, event)` in a machine puts `event` into the inbox of the
 * agent `to`, in the same transaction as the checkpoint of the transition that sent it (a
 * transactional outbox). Never sent before the sender's state is committed, never lost once it is,
 * never twice: each message has a key of its sender's checkpoint, and a replayed one is a duplicate.
 * An event for an agent that does not exist, or is no longer active, is dropped.
 *
 * @example
 * on: { 'order.paid': { actions: sendToAgent(({ context }) => context.shipper, { type: 'ship', order: 'o-1' }) } }
 */
import { emit } from 'xstate';

/** The emitted event the runtime takes the message from (emit is a deferred effect: it runs after the checkpoint exists). */
export const OUTBOX_EVENT = 'durable.sendToAgent';

/** An event for another agent's inbox: plain JSON with a `type` (the runtime's `InboxEvent`). */
export interface AgentMessage {
  type: string;
  [key: string]: unknown;
}

export interface OutboxEmit {
  type: typeof OUTBOX_EVENT;
  to: string;
  event: AgentMessage;
}

/** What an expression of `sendToAgent` is given: the sending transition's context and event. */
export interface SendArgs {
  context: any;
  event: any;
  /** The sending agent's actor: `self.id` is its agent id. */
  self: { id: string };
}

type Resolvable<T> = T | ((args: SendArgs) => T);

/**
 * The action. Its type is loose on purpose: XState types an `emit` action by the machine's declared
 * `emitted` events, and a machine should not have to declare the runtime's own to send a message.
 */
export function sendToAgent(to: Resolvable<string>, event: Resolvable<AgentMessage>): any {
  return emit((args: SendArgs) => {
    const message: OutboxEmit = {
      type: OUTBOX_EVENT,
      to: typeof to === 'function' ? to(args) : to,
      event: typeof event === 'function' ? event(args) : event,
    };
    return message;
  });
}
