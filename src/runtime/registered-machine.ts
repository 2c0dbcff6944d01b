import type { AnyMachineSnapshot, AnyStateMachine, StateNode } from 'xstate';
import { CHILD_EVENT_TYPES } from '../durable/child-events.js';
import type { z } from 'zod';
import { InvalidEventError, InvalidInputError, MachineNotDurableError } from '../core/errors.js';
import { describeIssues } from '../core/validation-issues.js';
import type { ActorDeclaration, MachineDefinition, SnapshotUpgrade, MachineRetention } from '../durable/definition.js';
import { lintDefinition, type LintFinding } from '../durable/lint.js';
import type { InboxEvent } from '../store/store.js';
import { makeDurable } from './durable-machine.js';

/** A machine definition as the runtime keeps it: defaults applied, what is asked often computed once. */
export interface RegisteredMachine {
  name: string;
  version: string;
  /** How to read a checkpoint of an earlier version (see `MachineDefinition.upgrades`). */
  upgrades: Readonly<Record<string, SnapshotUpgrade>>;
  /** The user's machine (for definitions, diagrams, path tests). */
  machine: AnyStateMachine;
  /** The same machine wrapped for durability: what the runtime runs. */
  durable: AnyStateMachine;
  /**
   * The event descriptors some state handles, as the machine writes them (sorted), minus XState's and
   * the runtime's own: literal types, and wildcards, `'*'` (any event) and partial ones like `'event.*'`.
   * Whether a user may send a type: `takesEventType`.
   */
  eventTypes: readonly string[];
  /** `eventTypes` read once for `takesEventType` and `validateEvent`. */
  eventMatch: EventMatch;
  /** Top-level state names. */
  states: readonly string[];
  retention: MachineRetention | undefined;
  input: z.ZodType | undefined;
  events: Record<string, z.ZodType>;
  /** What each invoked actor is, by src; an actor not declared is a `call`. */
  actors: ReadonlyMap<string, ActorDeclaration>;
  refuse: MachineDefinition['refuse'];
  backlog: MachineDefinition['backlog'];
  /** The durability linter's warnings (those the definition does not ignore): the runtime logs them. */
  lintWarnings: readonly LintFinding[];
}

const PLAIN_CALL: ActorDeclaration = { kind: 'call' };

/** The definition as the runtime keeps it; MachineNotDurableError if the durability linter finds an error in its machine. */
export function registerMachine(def: MachineDefinition): RegisteredMachine {
  const version = def.version ?? def.machine.version ?? '1';
  const findings = lintDefinition(def);
  const errors = findings.filter((f) => f.severity === 'error');
  if (errors.length > 0) throw new MachineNotDurableError(def.name, errors);
  const eventTypes = userEventTypes(def.machine, def.events);
  return {
    name: def.name,
    version,
    upgrades: def.upgrades ?? {},
    machine: def.machine,
    durable: makeDurable(def.machine, new Set(Object.entries(def.actors ?? {}).flatMap(([src, d]) => (d.kind === 'llm' ? [src] : [])))),
    eventTypes,
    eventMatch: eventMatch(eventTypes, def.events ?? {}),
    states: Object.keys(def.machine.root.states),
    retention: def.retention,
    input: def.input,
    events: def.events ?? {},
    actors: new Map(Object.entries(def.actors ?? {})),
    refuse: def.refuse,
    backlog: def.backlog,
    lintWarnings: findings.filter((f) => f.severity === 'warning'),
  };
}

/** The declaration of the actor `src` of this machine (`call` when it declares none). */
export function actorOf(machine: Pick<RegisteredMachine, 'actors'>, src: string): ActorDeclaration {
  return machine.actors.get(src) ?? PLAIN_CALL;
}

/**
 * The event types a user may send: those some transition names, and those the definition gives a
 * schema for (an event only a guard or an action reads, e.g. one that wakes an `always`, is sent
 * as XState takes it: no transition of its own, a macrostep all the same).
 */
function userEventTypes(machine: AnyStateMachine, schemas: MachineDefinition['events']): string[] {
  const types = new Set<string>(Object.keys(schemas ?? {}));
  const visit = (node: StateNode<any, any>) => {
    for (const type of node.transitions.keys()) types.add(type);
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root);
  // Child agents' reports come from the runtime, never from a user: a request cannot forge one.
  const runtimeOnly = new Set<string>(CHILD_EVENT_TYPES);
  return [...types].filter((t) => !t.startsWith('xstate.') && !t.startsWith('runtime.') && !runtimeOnly.has(t)).sort();
}

/**
 * How a machine's event descriptors match sent types, computed once at registration so that
 * `validateEvent` does a set lookup in the common case.
 */
export interface EventMatch {
  /** The literal types (descriptors that are not wildcards). */
  literal: ReadonlySet<string>;
  /** Whether some state handles `'*'`. */
  any: boolean;
  /** The partial descriptors that can match, as what a type equals or starts with: `'event.*'` → `'event'` / `'event.'`. */
  partial: readonly PartialDescriptor[];
  /** Payload schemas keyed by a wildcard descriptor, the most specific first (`'*'`, whose `partial` is undefined, last). */
  descriptorSchemas: readonly { descriptor: string; partial: PartialDescriptor | undefined; schema: z.ZodType }[];
}

interface PartialDescriptor {
  /** The descriptor without `.*`: XState matches it too (`'event'` for `'event.*'`). */
  stem: string;
  /** The descriptor without `*`. */
  prefix: string;
}

/** `'*'` or a partial descriptor (`'event.*'`): XState matches it against other types; no sent event has such a type. */
export function isEventDescriptor(type: string): boolean {
  return type === '*' || type.endsWith('.*');
}

/**
 * XState's partial descriptor (`matchesEventDescriptor` in xstate's stateUtils) as a stem and prefix:
 * its tokens before `*` must be the type's first tokens, then the type may end or go on (`'event.*'`
 * matches `event`, `event.a`, `event.a.b`, not `eventx`). A `*` token before the last never matches
 * (XState warns of infix wildcards): undefined.
 */
function partialDescriptor(descriptor: string): PartialDescriptor | undefined {
  const stem = descriptor.slice(0, -2);
  if (stem.split('.').includes('*')) return undefined;
  return { stem, prefix: `${stem}.` };
}

function matchesPartial(type: string, { stem, prefix }: PartialDescriptor): boolean {
  return type.startsWith(prefix) || type === stem;
}

function eventMatch(eventTypes: readonly string[], schemas: Readonly<Record<string, z.ZodType>>): EventMatch {
  const isPartial = (t: string) => t !== '*' && isEventDescriptor(t);
  return {
    literal: new Set(eventTypes.filter((t) => !isEventDescriptor(t))),
    any: eventTypes.includes('*'),
    partial: eventTypes.filter(isPartial).flatMap((t) => partialDescriptor(t) ?? []),
    // As XState orders wildcard candidates: the longest descriptor first, so `'*'` comes last.
    // A key with an infix `*` matches nothing: left out.
    descriptorSchemas: Object.entries(schemas)
      .map(([descriptor, schema]) => ({ descriptor, partial: isPartial(descriptor) ? partialDescriptor(descriptor) : undefined, schema }))
      .filter(({ descriptor, partial }) => descriptor === '*' || partial !== undefined)
      .sort((a, b) => b.descriptor.length - a.descriptor.length),
  };
}

/** Never a user's to send, whatever the machine handles: XState's, the runtime's, child reports, and descriptors themselves. */
function isReservedEventType(type: string): boolean {
  return type.startsWith('xstate.') || type.startsWith('runtime.') || (CHILD_EVENT_TYPES as readonly string[]).includes(type) || isEventDescriptor(type);
}

/**
 * Whether a user may send an event of this type to the machine: some state handles it literally, or
 * through a wildcard (`'*'`, or a partial descriptor like `'event.*'`, matched as XState matches it).
 * A reserved type (`xstate.*`, `runtime.*`, a child report, a descriptor such as `'*'`) never is.
 */
export function takesEventType(machine: Pick<RegisteredMachine, 'eventMatch'>, type: string): boolean {
  const match = machine.eventMatch;
  if (match.literal.has(type)) return true; // the common case: one lookup (literals are never reserved)
  if (isReservedEventType(type)) return false;
  return match.any || match.partial.some((p) => matchesPartial(type, p));
}

/** The schema a type's payload must fit: the one keyed by the type, else by the most specific descriptor matching it. */
export function eventSchema(machine: Pick<RegisteredMachine, 'events' | 'eventMatch'>, type: string): z.ZodType | undefined {
  const own = machine.events[type];
  if (own || machine.eventMatch.descriptorSchemas.length === 0) return own;
  return machine.eventMatch.descriptorSchemas.find(({ partial }) => !partial || matchesPartial(type, partial))?.schema;
}

/** The event as the machine's schema for its type reads it; InvalidEventError for a type it does not take or a bad payload. */
export function validateEvent(machine: RegisteredMachine, event: InboxEvent): InboxEvent {
  if (!takesEventType(machine, event.type)) {
    throw new InvalidEventError(machine.name, event.type, machine.eventTypes);
  }
  const schema = eventSchema(machine, event.type);
  if (!schema) return event;
  const result = schema.safeParse(event);
  if (!result.success) {
    throw new InvalidEventError(machine.name, event.type, machine.eventTypes, `Invalid "${event.type}" event: ${describeIssues(result.error)}.`);
  }
  return result.data as InboxEvent;
}

/** The spawn input as the machine's schema reads it; InvalidInputError if it does not fit. */
export function validateInput(machine: RegisteredMachine, input: unknown): unknown {
  if (!machine.input) return input;
  const result = machine.input.safeParse(input);
  if (result.success) return result.data;
  throw new InvalidInputError(`Invalid input: ${describeIssues(result.error)}.`);
}

/**
 * The user event types this snapshot would take now (a guard that needs a payload counts as taking it),
 * descriptors included: `'event.*'` when the state takes some event it matches.
 */
export function acceptedEventTypes(machine: RegisteredMachine, snapshot: AnyMachineSnapshot): string[] {
  return machine.eventTypes.filter((type) => {
    try {
      // A descriptor is asked with itself as the sample type. `can` (unlike `send`, which throws for
      // '*') just selects candidates: the transitions keyed by the descriptor, then the wildcards that
      // match it as a type ('*', and shorter partial ones such as 'a.*' for 'a.b.*'), all of which take
      // every type the descriptor matches. A made-up sample ('event.x') could instead hit a state's
      // literal transition of that very type (a forbidden one, or one to elsewhere); no literal
      // transition has a descriptor's type.
      return snapshot.can({ type });
    } catch {
      return true;
    }
  });
}
