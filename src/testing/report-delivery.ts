import { CHILD_EVENT_TYPES, type ChildEvent } from '../durable/child-events.js';
export { reportKey } from '../durable/child-events.js';
import type { Runtime } from '../runtime/runtime.js';

/** Is this a report a child agent sends its parent (`agent.done`, `agent.failed`, `agent.response`, with the child's id)? */
export function isChildReport(event: { type: string }): event is ChildEvent {
  return (CHILD_EVENT_TYPES as readonly string[]).includes(event.type) && typeof (event as { agentId?: unknown }).agentId === 'string';
}

/**
 * Puts a child's report into the parent's inbox the way the runtime does for a real child
 * (`runtime.report`: committed under the child's key, then delivered in inbox order). Reports are
 * the runtime's own events (`runtime.send` refuses them, so that no request can forge one), and in
 * path runs no child exists to send them. Returns whether the inbox already held that key (the
 * report is then dropped, as the runtime drops a repeated one).
 */
export async function deliverReport(runtime: Runtime, parentId: string, report: ChildEvent): Promise<{ duplicate: boolean }> {
  return { duplicate: (await runtime.report(parentId, report)).duplicate };
}
