import type { AnyStateMachine } from 'xstate';
import type { z } from 'zod';
import type { LintWarningCode } from './lint.js';

/**
 * A statechart the runtime can run, as registered by the user. `TMachine`: the machine's own type,
 * kept by a definition written `{ … } satisfies MachineDefinition` (or typed
 * `MachineDefinition<typeof myMachine>`), so that `runtime.agentsOf(definition)` types views and
 * events by it; `MachineDefinition` alone takes any machine.
 */
export interface MachineDefinition<TMachine extends AnyStateMachine = AnyStateMachine> {
  /** The registry name (`POST /agents {"machine": name}`). */
  name: string;
  machine: TMachine;
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
  /**
   * Validates event payloads by type; types without a schema are accepted with any payload. A key may
   * be a wildcard descriptor the machine uses (`'event.*'`, `'*'`): its schema applies to the types it
   * matches that have no schema of their own (the most specific descriptor's, `'*'` last). A type
   * listed here is one the machine takes even if no transition names it (an event that only a guard
   * or an action reads, such as one that wakes an `always`).
   */
  events?: Record<string, z.ZodType>;
  /**
   * What the machine's invoked actors are, by actor src (the name in `setup({ actors })`). Metrics,
   * traces and the dashboard read this, never actor names: an `llm` actor gets the LLM metrics and
   * spans whatever it is called. An actor not listed is a plain `call`: logged, counted as an action.
   */
  actors?: Readonly<Record<string, ActorDeclaration>>;
  /**
   * By event type: refuses an event that the agent's current state makes a conflict (HTTP 409,
   * nothing stored) with a sentence saying why, or accepts it (undefined). Checked when the event is
   * sent, against the last committed state (read only for these types); the machine itself still
   * decides when it processes the event.
   */
  refuse?: Readonly<Record<string, EventRefusal>>;
  /**
   * Work an agent accepted and has not done yet, from its context: counted with the events waiting
   * in its inbox against `RuntimeOptions.maxInbox`. For a machine that takes work into its context
   * at once and does it later (the reference agent's queued tasks); unset: only inbox events count.
   */
  backlog?: (context: unknown) => number;
  /** This machine's agents' retention, instead of the runtime's (`RuntimeOptions.retention`) for what it sets. */
  retention?: MachineRetention;
  /**
   * The durability linter's warnings this machine accepts, by code (they are then neither logged nor
   * printed by `durable-agents lint`). Errors cannot be ignored: they refuse the machine.
   */
  lint?: { ignore?: readonly LintWarningCode[] };
}

/** How much of an agent's history to keep: a checkpoint either set rule keeps is kept, and always the last. */
export interface MachineRetention {
  /** The newest N checkpoints (and their action-log rows). */
  keepCheckpoints?: number;
  /** The checkpoints of the last D days. */
  keepDays?: number;
}

/**
 * - `llm`: a call to a language model; its input is the request, its output the answer.
 * - `effect`: a side effect on the world, done once per idempotency key. `idempotencyKey` says how to
 *   read the key from a call (for spans and the dashboard when the call failed and has no output).
 * - `tools`: runs the tool calls of an LLM answer; its output is one `{ callId, name, ok }` per call.
 * - `wait`: a timer; its calls are not written to the action log.
 * - `call`: anything else (the default).
 */
export type ActorDeclaration =
  | { kind: 'llm' }
  | { kind: 'effect'; idempotencyKey?: (call: { agentId: string; input: unknown }) => string | undefined }
  | { kind: 'tools' }
  | { kind: 'wait' }
  | { kind: 'call' };

export type ActorKind = ActorDeclaration['kind'];

export type EventRefusal = (event: { type: string; [key: string]: unknown }, current: { state: unknown; context: unknown }) => string | undefined;

export type SnapshotUpgrade = (snapshot: PersistedSnapshotJson) => PersistedSnapshotJson;

/** An XState persisted snapshot as parsed from a checkpoint. */
export interface PersistedSnapshotJson {
  value: unknown;
  status: string;
  context?: unknown;
  children?: Record<string, { src?: unknown; snapshot?: unknown } | undefined>;
  [key: string]: unknown;
}

/** A transition guard's name as the chart reads it: the registered name, an inline function's name, else `guard`. */
export function guardName(guard: unknown): string | undefined {
  if (guard === undefined || guard === null) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') return guard.name || 'guard';
  if (typeof guard === 'object' && typeof (guard as { type?: unknown }).type === 'string') return (guard as { type: string }).type;
  return 'guard';
}
