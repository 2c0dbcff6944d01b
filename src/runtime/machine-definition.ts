import type { AnyStateMachine, StateNode } from 'xstate';
import type { z } from 'zod';
import { makeDurable } from './durable-machine.js';

/** A statechart the runtime can run, as registered by the user. */
export interface MachineDefinition {
  /** The registry name (`POST /agents {"machine": name}`). */
  name: string;
  machine: AnyStateMachine;
  /** Stored beside every snapshot; defaults to `machine.version`, else "1". */
  version?: string;
  /**
   * Earlier versions whose checkpoints this version restores, each with the function that turns one
   * of their persisted snapshots (parsed JSON) into one of this version. A checkpoint of any other
   * version quarantines its agent.
   */
  upgrades?: Readonly<Record<string, SnapshotUpgrade>>;
  /** Validates spawn input. */
  input?: z.ZodType;
  /** Validates event payloads by type; types without a schema are accepted with any payload. */
  events?: Record<string, z.ZodType>;
  /** Invoked actors whose calls are not worth an action-log row (timers). */
  unloggedActors?: readonly string[];
}

export type SnapshotUpgrade = (snapshot: PersistedSnapshotJson) => PersistedSnapshotJson;

/** An XState persisted snapshot as parsed from a checkpoint. */
export interface PersistedSnapshotJson {
  value: unknown;
  status: string;
  context?: unknown;
  children?: Record<string, { src?: unknown; snapshot?: unknown } | undefined>;
  [key: string]: unknown;
}

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
  input: z.ZodType | undefined;
  events: Record<string, z.ZodType>;
  unloggedActors: ReadonlySet<string>;
}

const BUILTIN_UNLOGGED_ACTORS = ['sleepUntil'] as const;

export function registerMachine(def: MachineDefinition): RegisteredMachine {
  const version = def.version ?? def.machine.version ?? '1';
  return {
    name: def.name,
    version,
    upgrades: def.upgrades ?? {},
    machine: def.machine,
    durable: makeDurable(def.machine),
    eventTypes: userEventTypes(def.machine),
    states: Object.keys(def.machine.root.states),
    input: def.input,
    events: def.events ?? {},
    unloggedActors: new Set([...BUILTIN_UNLOGGED_ACTORS, ...(def.unloggedActors ?? [])]),
  };
}

function userEventTypes(machine: AnyStateMachine): string[] {
  const types = new Set<string>();
  const visit = (node: StateNode<any, any>) => {
    for (const type of node.transitions.keys()) types.add(type);
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root);
  return [...types].filter((t) => !t.startsWith('xstate.') && !t.startsWith('runtime.') && t !== '*').sort();
}

/** A transition guard's name as the chart reads it: the registered name, an inline function's name, else `guard`. */
export function guardName(guard: unknown): string | undefined {
  if (guard === undefined || guard === null) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') return guard.name || 'guard';
  if (typeof guard === 'object' && typeof (guard as { type?: unknown }).type === 'string') return (guard as { type: string }).type;
  return 'guard';
}
