import type { AnyStateMachine, AnyStateNode, EventObject } from 'xstate';

/** What the synthetic done/error events of an invoke may carry. */
export interface InvokeOutcomes {
  /** Outputs to explore for `xstate.done.actor.<id>` (default: one `undefined` output, when the chart handles done). */
  done?: readonly unknown[];
  /** Errors to explore for `xstate.error.actor.<id>` (default: one `Error`, when the chart handles errors). */
  error?: readonly unknown[];
}

/** An invoke found in the machine's definition. */
export interface InvokeInfo {
  /** The invoke id: the child's id, and the suffix of its done/error event types. */
  id: string;
  /** The actor's registered name in `setup({ actors })`. */
  src: string;
  /** The id of the state node that invokes it. */
  stateId: string;
  handlesDone: boolean;
  handlesError: boolean;
  /** False when its src is in `fakes`: it runs on its own and the paths do not settle it. */
  driven: boolean;
}

/** Every invoke of every state node, in document order. */
export function findInvokes(machine: AnyStateMachine, fakes: Readonly<Record<string, unknown>>): InvokeInfo[] {
  const found: InvokeInfo[] = [];
  const visit = (node: AnyStateNode) => {
    for (const invoke of node.invoke) {
      const src = invoke.src as unknown;
      if (typeof src !== 'string' || src.startsWith('xstate.invoke.')) {
        throw new Error(
          `State "${node.id}" invokes inline actor logic (invoke id "${invoke.id}"). Path tests replace invoked actors by name, ` +
            'and the runtime restores children by name: register it in setup({ actors }) and invoke it by that name.',
        );
      }
      const handlesDone = handles(node, `xstate.done.actor.${invoke.id}`);
      const handlesError = handles(node, `xstate.error.actor.${invoke.id}`);
      if (src in fakes && (handlesDone || handlesError)) {
        throw new Error(
          `fakes.${src}: state "${node.id}" waits for "${invoke.id}" to finish (onDone/onError), so the paths must settle it; ` +
            'a faked actor runs on its own. Describe its results with `outcomes` instead.',
        );
      }
      found.push({ id: invoke.id, src, stateId: node.id, handlesDone, handlesError, driven: !(src in fakes) });
    }
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root);
  return found;
}

/** Does this node or one of its ancestors take the event? */
function handles(node: AnyStateNode, eventType: string): boolean {
  for (let n: AnyStateNode | undefined = node; n; n = n.parent) {
    if (n.transitions.has(eventType)) return true;
  }
  return false;
}

/**
 * The `xstate.done.actor.<id>` / `xstate.error.actor.<id>` events to explore, shaped as XState
 * shapes them, one per sample: `outcomes[id]` (else `outcomes[src]`), or one default sample for each
 * kind the chart handles. An explicit sample is explored even if no state handles it (an unhandled
 * error puts the machine in status `error`, a path worth seeing).
 */
export function syntheticEvents(invokes: readonly InvokeInfo[], outcomes: Readonly<Record<string, InvokeOutcomes>>): EventObject[] {
  const events: EventObject[] = [];
  const seen = new Set<string>();
  for (const invoke of invokes) {
    if (!invoke.driven || seen.has(invoke.id)) continue;
    seen.add(invoke.id);
    const given = outcomes[invoke.id] ?? outcomes[invoke.src] ?? {};
    const done = given.done ?? (invoke.handlesDone ? [undefined] : []);
    const error = given.error ?? (invoke.handlesError ? [new Error(`"${invoke.id}" failed (path test)`)] : []);
    for (const output of done) events.push({ type: `xstate.done.actor.${invoke.id}`, output, actorId: invoke.id } as EventObject);
    for (const err of error) events.push({ type: `xstate.error.actor.${invoke.id}`, error: err, actorId: invoke.id } as EventObject);
  }
  return events;
}

/** Throws on an `outcomes` key that names neither an invoke id nor an invoked src. */
export function checkOutcomeKeys(invokes: readonly InvokeInfo[], outcomes: Readonly<Record<string, InvokeOutcomes>>): void {
  const known = new Set(invokes.flatMap((i) => [i.id, i.src]));
  for (const key of Object.keys(outcomes)) {
    if (!known.has(key)) {
      throw new Error(`outcomes.${key}: no invoke has this id or src (invokes: ${invokes.map((i) => `${i.id} (${i.src})`).join(', ') || 'none'}).`);
    }
  }
}
