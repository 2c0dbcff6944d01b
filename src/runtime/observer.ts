import type { SerializedError, StoreUnavailableReason } from '../core/errors.js';
import type { ActorDeclaration } from '../durable/definition.js';
import type { ActionWrite } from '../store/store.js';

/**
 * What the runtime reports as it works, for metrics and traces. Every method is optional and is
 * called synchronously after the fact (a transition once committed), so an observer can never
 * delay or break the agents it watches: exceptions it throws are caught and logged.
 */
export interface RuntimeObserver {
  transitionCommitted?(event: {
    agentId: string;
    machine: string;
    seq: number;
    eventType: string;
    state: unknown;
    status: string;
    /** The invoked actor whose completion caused this transition (LLM call, effect…), if any. */
    action: ActionWrite | undefined;
    /** What the machine declares that actor to be (`llm`, `effect`, `call`): observers branch on this, never on names. */
    actor: ActorDeclaration | undefined;
    /** When the transition happened, before its commit (epoch ms). */
    at: number;
  }): void;
  /** Once, when the runtime is created: the machines it runs and what their actors are (metrics start their series at 0). */
  machinesRegistered?(machines: readonly { name: string; actors: ReadonlyMap<string, ActorDeclaration> }[]): void;
  batchCommitted?(event: { size: number; ms: number }): void;
  agentFailed?(event: { agentId: string; reason: 'actor' | 'commit' | 'corrupt'; error: SerializedError }): void;
  /**
   * An agent entered a top-level state named `failed` (the reference agent's: it waits for a person),
   * once per entry, with its context's `lastError` when it has one.
   */
  agentParked?(event: { agentId: string; machine: string; lastError: unknown }): void;
  /**
   * Shared store only: agents this process took over (`adopted`: no live process ran them) or let go
   * (`fenced`: another process runs it now, or it was stopped elsewhere; `lease-lost`: this process's
   * lease ran out).
   */
  ownershipChanged?(event: { change: OwnershipChange; agents: number }): void;
  /** The store stopped taking writes (disk full, file read-only or gone, database out of reach), or takes them again. */
  storeAvailability?(event: { ready: boolean; reason?: StoreUnavailableReason }): void;
  /** Agent writes held after a commit the store could not take (each failed retry counts them again). */
  writesHeld?(event: { writes: number }): void;
  /** A retry of held writes ended: all committed, or the store still takes none. */
  heldWritesRetried?(event: { outcome: 'committed' | 'unavailable' }): void;
  /** A retention run deleted rows (checkpoints, action-log rows, parts) or ended agents. */
  pruned?(event: { checkpoints: number; actions: number; events: number; parts: number; agents: number }): void;
}

export const OWNERSHIP_CHANGES = ['adopted', 'fenced', 'lease-lost'] as const;
export type OwnershipChange = (typeof OWNERSHIP_CHANGES)[number];

/** Reports one thing to the observer (what the runtime's parts are handed; an observer's exception is logged, never thrown). */
export type Observe = <K extends keyof RuntimeObserver>(what: K, event: Parameters<NonNullable<RuntimeObserver[K]>>[0]) => void;
