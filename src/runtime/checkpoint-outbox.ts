/**
 * What a checkpoint carries for other agents, committed in its transaction (the transactional
 * outbox): messages (`sendToAgent`), child agents to create (`spawnAgent`), and a child's report
 * to its parent when the checkpoint ends it. Each message's key is the same if the transition runs
 * again after a crash, so the recipient's inbox takes it once.
 */
import type { AnyMachineSnapshot } from 'xstate';
import { childEventKey, type ChildDoneEvent, type ChildFailedEvent } from '../durable/child-events.js';
import type { InboxEvent, NewAgent } from '../store/store.js';
import type { WriteOf } from '../store/write-plan.js';

type Checkpoint = WriteOf<'checkpoint'>;

/** An event for `to`'s inbox, keyed `<sender>:<checkpoint seq>:<n>`. */
export function addMessage(write: Checkpoint, to: string, event: InboxEvent): void {
  const outbox = (write.outbox ??= []);
  outbox.push({ to, event, key: `${write.agentId}:${write.seq}:${outbox.length}` });
}

/** A child to create with the checkpoint (once per id, however often the transition spawns it). */
export function addSpawn(write: Checkpoint, child: NewAgent): void {
  if (!(write.spawns ??= []).some((s) => s.id === child.id)) write.spawns.push(child);
}

/** A spawn that cannot be made, told to the spawning agent itself as its child's failure. */
export function addRefusedSpawn(write: Checkpoint, childId: string, why: string): void {
  addMessage(write, write.agentId, failedReport(childId, { name: 'SpawnRefused', code: 'spawn_refused', message: why }));
}

/** A child's end, for its parent's inbox, keyed once per child. */
export function addEndReport(write: Checkpoint, parent: string, ended: AnyMachineSnapshot): void {
  const event: ChildDoneEvent | ChildFailedEvent =
    ended.status === 'done' ? { type: 'agent.done', agentId: write.agentId, output: ended.output ?? null } : failedReport(write.agentId, failureOf(ended.error));
  (write.outbox ??= []).push({ to: parent, event, key: childEventKey.ended(write.agentId) });
}

/** `agent.failed` for a child: also what a status write outside any transition (a stop, a crash) tells the parent. */
export function failedReport(childId: string, error: ChildFailedEvent['error']): ChildFailedEvent {
  return { type: 'agent.failed', agentId: childId, error };
}

/** What a parent is told of its child's error: plain JSON, no stack. */
function failureOf(error: unknown): ChildFailedEvent['error'] {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { name: error.name, message: error.message, ...(typeof code === 'string' ? { code } : {}) };
  }
  return { message: typeof error === 'string' ? error : 'The child agent failed.' };
}
