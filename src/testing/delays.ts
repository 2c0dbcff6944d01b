import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition, EventObject } from 'xstate';
import { getStateNodes } from 'xstate/graph';

/**
 * `after` transitions as path steps. XState v5 turns `after: { <delay>: … }` on the state node
 * `<id>` into a transition on the event `xstate.after.<delay>.<id>` (`<delay>` is the key as
 * written: a number of milliseconds or a name from `setup({ delays })`), raised with that delay when
 * the state is entered and cancelled when it is left. A path takes it as a "time passes" step; the
 * run makes the runtime's own pending delay fire (controlled-delays.ts).
 */
const AFTER = /^xstate\.after\.([^.]+)\.(.+)$/;

/** `{ delay, stateId }` for an `after` event type, else undefined. */
export function parseAfter(type: string): { delay: string; stateId: string } | undefined {
  const match = AFTER.exec(type);
  return match ? { delay: match[1]!, stateId: match[2]! } : undefined;
}

/** `after answerDeadline`, `after 1000 ms`. */
export function afterLabel(type: string): string | undefined {
  const after = parseAfter(type);
  if (!after) return undefined;
  return /^\d+$/.test(after.delay) ? `after ${after.delay} ms` : `after ${after.delay}`;
}

/**
 * One event per delayed transition the paths can take: `{ type: 'xstate.after.<delay>.<id>' }`.
 *
 * Only a delay whose transition leaves its state (a target outside it, or `reenter`) is explored:
 * leaving cancels the delay and entering again arms it anew, so the state says whether it is
 * pending. One that stays (no target, or a target inside the state) fires once and is gone while
 * the state is the same, which no state projection can tell; such transitions stay in the
 * coverage's `missing` list.
 */
export function afterEvents(machine: AnyStateMachine): EventObject[] {
  const events: EventObject[] = [];
  for (const node of [machine.root, ...getStateNodes(machine.root)]) {
    const byType = new Map<string, AnyTransitionDefinition[]>();
    for (const t of node.after) byType.set(t.eventType, [...(byType.get(t.eventType) ?? []), t]);
    for (const [type, candidates] of byType) {
      if (candidates.some((t) => leavesSource(node, t))) events.push({ type });
    }
  }
  return events;
}

function leavesSource(source: AnyStateNode, t: AnyTransitionDefinition): boolean {
  if (!t.target?.length) return false;
  return t.reenter || t.target.every((target) => !isWithin(target, source));
}

function isWithin(node: AnyStateNode, ancestor: AnyStateNode): boolean {
  for (let n: AnyStateNode | undefined = node; n; n = n.parent) if (n === ancestor) return true;
  return false;
}
