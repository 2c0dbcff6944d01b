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
  /** Event types a user may send: every type some state handles, minus XState's and the runtime's own. */
  eventTypes: readonly string[];
  /** Top-level state names. */
  states: readonly string[];
  retention: MachineRetention | undefined;
  input: z.ZodType | undefined;
  events: Record<string, z.ZodType>;
  /** What each invoked actor is, by src; an actor not declared is a `call`. */
  actors: ReadonlyMap<string, ActorDeclaration>;
  refuse: MachineDefinition['refuse'];
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
  return {
    name: def.name,
    version,
    upgrades: def.upgrades ?? {},
    machine: def.machine,
    durable: makeDurable(def.machine),
    eventTypes: userEventTypes(def.machine),
    states: Object.keys(def.machine.root.states),
    retention: def.retention,
    input: def.input,
    events: def.events ?? {},
    actors: new Map(Object.entries(def.actors ?? {})),
    refuse: def.refuse,
    lintWarnings: findings.filter((f) => f.severity === 'warning'),
  };
}

/** The declaration of the actor `src` of this machine (`call` when it declares none). */
export function actorOf(machine: Pick<RegisteredMachine, 'actors'>, src: string): ActorDeclaration {
  return machine.actors.get(src) ?? PLAIN_CALL;
}

function userEventTypes(machine: AnyStateMachine): string[] {
  const types = new Set<string>();
  const visit = (node: StateNode<any, any>) => {
    for (const type of node.transitions.keys()) types.add(type);
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root);
  // Child agents' reports come from the runtime, never from a user: a request cannot forge one.
  const runtimeOnly = new Set<string>(CHILD_EVENT_TYPES);
  return [...types].filter((t) => !t.startsWith('xstate.') && !t.startsWith('runtime.') && !runtimeOnly.has(t) && t !== '*').sort();
}

/** The event as the machine's schema for its type reads it; InvalidEventError for a type it does not take or a bad payload. */
export function validateEvent(machine: RegisteredMachine, event: InboxEvent): InboxEvent {
  if (!machine.eventTypes.includes(event.type)) {
    throw new InvalidEventError(machine.name, event.type, machine.eventTypes);
  }
  const schema = machine.events[event.type];
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

/** The user event types this snapshot would take now (a guard that needs a payload counts as taking it). */
export function acceptedEventTypes(machine: RegisteredMachine, snapshot: AnyMachineSnapshot): string[] {
  return machine.eventTypes.filter((type) => {
    try {
      return snapshot.can({ type });
    } catch {
      return true;
    }
  });
}
