import { CHILD_EVENT_TYPES, type ChildEvent } from '../durable/child-events.js';
export { reportKey } from '../durable/child-events.js';

/** Is this a report a child agent sends its parent (`agent.done`, `agent.failed`, `agent.response`, with the child's id)? */
export function isChildReport(event: { type: string }): event is ChildEvent {
  return (CHILD_EVENT_TYPES as readonly string[]).includes(event.type) && typeof (event as { agentId?: unknown }).agentId === 'string';
}
