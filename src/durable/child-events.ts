/**
 * What a child agent tells its parent, as events in the parent's inbox. Each is committed in the
 * transaction of the child's checkpoint that caused it (a transactional outbox), under a key of
 * the child's, so a parent gets each exactly once, also when the two run in different processes,
 * the parent is passivated, or either crashes.
 */

/** The child reached a final state: `output` is its snapshot's output (null when it has none). */
export type ChildDoneEvent = {
  type: 'agent.done';
  agentId: string;
  output: unknown;
};

/** The child ended in error (its statechart threw, or its stored state could not be restored). */
export type ChildFailedEvent = {
  type: 'agent.failed';
  agentId: string;
  error: { name?: string; message: string; code?: string };
};

/**
 * The reference agent's answer to one of its tasks, sent to its parent once the task's response is
 * committed (an agent-as-tool call's result): the child stays an agent and may take more tasks,
 * unless it was spawned with `finishAfterTasks` (an agent tool's child is), when its `agent.done`
 * follows once nothing more is queued.
 */
export type ChildResponseEvent = {
  type: 'agent.response';
  agentId: string;
  seq: number;
  task: string;
  response: string;
};

export type ChildEvent = ChildDoneEvent | ChildFailedEvent | ChildResponseEvent;

export const CHILD_EVENT_TYPES = ['agent.done', 'agent.failed', 'agent.response'] as const;

/** Idempotency keys of the reports, in the parent's inbox. */
export const childEventKey = {
  ended: (childId: string) => `${childId}:ended`,
  response: (childId: string, seq: number) => `${childId}:${seq}:response`,
};

/** The key a report is filed under in its parent's inbox: a child ends once, and answers each task once. */
export function reportKey(report: ChildEvent): string {
  return report.type === 'agent.response' ? childEventKey.response(report.agentId, report.seq) : childEventKey.ended(report.agentId);
}
