import type { AppendResult, InboxEvent, Store } from './store.js';

/**
 * Commits one event on its own (the runtime batches events through its group committer instead):
 * its seq, or the refusal thrown (unknown agent, agent not active).
 */
export async function appendEvent(store: Store, agentId: string, event: InboxEvent, idempotencyKey?: string): Promise<AppendResult> {
  const [result] = await store.commit([
    { kind: 'event', agentId, event, idempotencyKey: idempotencyKey ?? null, at: new Date().toISOString() },
  ]);
  if (result && 'refused' in result) throw result.refused;
  if (!result) throw new Error('The store returned no result for an event write.');
  return result;
}
