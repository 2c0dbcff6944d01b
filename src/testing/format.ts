import type { EventObject, StateValue } from 'xstate';
import { shorten } from '../core/errors.js';
import { CHILD_EVENT_TYPES } from '../durable/child-events.js';
import { afterLabel } from './delays.js';

/** Longest sample shown in a path's event label. */
const LABEL_CHARS = 32;

/** What a state projection sees: the same plain view of a traversal snapshot and of a committed checkpoint. */
export interface StateView {
  value: StateValue;
  /** The context as JSON (what a checkpoint holds): `undefined` fields are gone, dates are strings. */
  context: any; // each machine projects its own context
  status: 'active' | 'done' | 'error' | 'stopped';
}

/**
 * The default projection: the state value, the status when it is not `active`, and a coarse summary
 * of the context, so that two snapshots differing only in a counter, a text or a list's contents
 * count as the same state. Every field gets a small finite domain: `null` and booleans as they are,
 * integers 0–3 as they are (`">3"`, `"<0"`, `"fraction"` otherwise), strings up to 24 characters as
 * they are (longer ones `"…"`), arrays by length 0, 1 or `"2+"`, objects two levels deep. Override it
 * with `serializeState` to keep exactly what your guards read (see the agent's options).
 */
export function defaultSerializeState(view: StateView): string {
  return JSON.stringify({
    value: view.value,
    ...(view.status === 'active' ? {} : { status: view.status }),
    context: summarize(view.context, 0),
  });
}

function summarize(value: unknown, depth: number): unknown {
  if (value === null || value === undefined || typeof value === 'boolean') return value ?? null;
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return 'fraction';
    return value < 0 ? '<0' : value > 3 ? '>3' : value;
  }
  if (typeof value === 'string') return value.length <= 24 ? value : '…';
  if (Array.isArray(value)) return { length: value.length < 2 ? value.length : '2+' };
  if (typeof value === 'object') {
    if (depth >= 2) return 'object';
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, summarize((value as Record<string, unknown>)[key], depth + 1)]),
    );
  }
  return typeof value;
}

/** A value as it will be after a trip through a checkpoint. */
export function toJsonValue<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value, jsonReplacer)) as T);
}

/** Errors keep their name and message in JSON (a bare Error stringifies to `{}`). */
export function jsonReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { ...value, name: value.name, message: value.message };
  return value;
}

/** JSON with object keys sorted, for comparisons that must not depend on key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'undefined';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object' && !(value instanceof Error)) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** `{"callingLLM":"requesting"}` → `callingLLM.requesting`; parallel regions are joined with `,`. */
export function stateLabel(value: StateValue): string {
  if (typeof value === 'string') return value;
  return Object.entries(value)
    .map(([key, child]) => (child === undefined || (typeof child === 'object' && Object.keys(child).length === 0) ? key : `${key}.${stateLabel(child as StateValue)}`))
    .join(',');
}

const SYNTHETIC = /^xstate\.(done|error)\.actor\.(.+)$/;

/** `{ kind: 'done' | 'error', id }` for a synthetic actor event, else undefined. */
export function parseSynthetic(type: string): { kind: 'done' | 'error'; id: string } | undefined {
  const match = SYNTHETIC.exec(type);
  return match ? { kind: match[1] as 'done' | 'error', id: match[2]! } : undefined;
}

/**
 * A short label for an event: `task.add`, `llm.done`, `llm.error`, `after answerDeadline`,
 * `agent.done(path-agent:w0)` (a child's report names the child). When several samples of one
 * type (for a report: of one child) are explored, the sample is shown too:
 * `llm.error(transient)`, `task.add({"task":"a"})`, `agent.response(path-agent:w0, {"seq":1…})`.
 */
export function eventLabel(event: EventObject, ambiguous: ReadonlySet<string>): string {
  const after = afterLabel(event.type);
  if (after) return after;
  const synthetic = parseSynthetic(event.type);
  const child = childOf(event);
  const base = synthetic ? `${synthetic.id}.${synthetic.kind}` : event.type;
  const plain = !ambiguous.has(sampleKey(event));
  if (child !== undefined) {
    const { type: _type, agentId: _agentId, ...payload } = event as EventObject & { agentId: string };
    return plain ? `${base}(${child})` : `${base}(${child}, ${shorten(JSON.stringify(payload, jsonReplacer), LABEL_CHARS)})`;
  }
  if (plain) return base;
  if (synthetic) {
    const sample = synthetic.kind === 'done' ? (event as { output?: unknown }).output : (event as { error?: unknown }).error;
    return `${base}(${sampleLabel(sample)})`;
  }
  const { type: _type, ...payload } = event;
  return `${base}(${shorten(JSON.stringify(payload, jsonReplacer), LABEL_CHARS)})`;
}

function sampleLabel(sample: unknown): string {
  if (sample && typeof sample === 'object') {
    const kind = (sample as { kind?: unknown }).kind;
    if (typeof kind === 'string') return kind;
    if (sample instanceof Error) return sample.name;
  }
  return shorten(JSON.stringify(sample, jsonReplacer) ?? 'undefined', LABEL_CHARS);
}

/** The child a report (`agent.done`, `agent.failed`, `agent.response`) comes from, else undefined. */
function childOf(event: EventObject): string | undefined {
  const agentId = (event as { agentId?: unknown }).agentId;
  return (CHILD_EVENT_TYPES as readonly string[]).includes(event.type) && typeof agentId === 'string' ? agentId : undefined;
}

/** What samples are told apart by: the event type, and for a child's report the child too. */
function sampleKey(event: EventObject): string {
  const child = childOf(event);
  return child === undefined ? event.type : `${event.type} ${child}`;
}

/** Event types (for reports: type and child) with more than one explored sample: their labels must show which sample. */
export function ambiguousTypes(events: readonly EventObject[]): Set<string> {
  const counts = new Map<string, number>();
  for (const e of events) counts.set(sampleKey(e), (counts.get(sampleKey(e)) ?? 0) + 1);
  return new Set([...counts].filter(([, n]) => n > 1).map(([key]) => key));
}
