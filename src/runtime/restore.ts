/**
 * Reading a stored checkpoint back as something XState can restore: parse, upgrade from an earlier
 * machine version, validate. Pure: a refusal is an Error whose message says what is wrong, and the
 * caller quarantines the agent with it (state corruption is its own failure domain).
 */
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import type { QuarantineReason } from '../core/errors.js';
import type { PersistedSnapshotJson } from '../durable/definition.js';
import type { CheckpointRecord, RestorableCheckpoint } from '../store/store.js';
import type { RegisteredMachine } from './registered-machine.js';

/** A checkpoint this process cannot restore, and which kind of reason that is (the quarantined agent's `error.code`). */
export class RestoreRefusedError extends Error {
  constructor(
    readonly reason: QuarantineReason,
    message: string,
  ) {
    super(message);
  }
}

/** The checkpoint's snapshot as this process's version of the machine reads it; throws a RestoreRefusedError if it cannot. */
export function readSnapshot(checkpoint: RestorableCheckpoint, machine: RegisteredMachine): PersistedSnapshotJson {
  const version = checkpoint.machineVersion;
  const upgrade = version !== machine.version && Object.hasOwn(machine.upgrades, version) ? machine.upgrades[version] : undefined;
  if (version !== machine.version && !upgrade) {
    throw new RestoreRefusedError('version_unknown', `its checkpoint was written by version ${version} of "${machine.name}", this process runs ${machine.version} and has no upgrade from it`);
  }
  if (checkpoint.unreadable !== undefined) throw new RestoreRefusedError('snapshot_unreadable', checkpoint.unreadable);
  let snapshot: unknown;
  try {
    snapshot = JSON.parse(checkpoint.snapshot);
  } catch (err) {
    throw new RestoreRefusedError('snapshot_unreadable', `its snapshot is not valid JSON (${(err as Error).message})`);
  }
  if (!isPersistedSnapshot(snapshot)) throw new RestoreRefusedError('snapshot_unreadable', 'its snapshot is not an XState persisted snapshot');
  if (upgrade) {
    snapshot = upgrade(snapshot);
    if (!isPersistedSnapshot(snapshot)) throw new RestoreRefusedError('restore_failed', `the upgrade from version ${version} did not return a persisted snapshot`);
  }
  // XState's restore silently drops a child whose src is not in the machine's actors (no error, the
  // snapshot stays active), leaving the agent stuck forever in the invoking state: refuse it here,
  // loudly (test/runtime/corruption.test.ts).
  const parsed = snapshot;
  for (const [id, child] of Object.entries(parsed.children ?? {})) {
    if (typeof child?.src !== 'string' || !resolvesActor(machine.durable, child.src)) {
      throw new RestoreRefusedError('restore_failed', `its snapshot has a running actor "${id}" whose logic "${String(child?.src)}" is not registered`);
    }
  }
  return parsed;
}

/**
 * Whether XState finds the logic a snapshot's child names: a name registered in `setup({ actors })`,
 * or an inline invoke, named `xstate.invoke.<index>.<state node id>` after its place in the chart.
 */
function resolvesActor(machine: AnyStateMachine, src: string): boolean {
  if (src in machine.implementations.actors) return true;
  const inline = /^xstate\.invoke\.(\d+)\.(.+)$/.exec(src);
  if (!inline) return false;
  let node: AnyStateNode;
  try {
    node = machine.getStateNodeById(inline[2]!);
  } catch {
    return false; // no such state in this version of the chart
  }
  const config: unknown = node.config.invoke;
  const invoke: unknown = Array.isArray(config) ? config[Number(inline[1])] : Number(inline[1]) === 0 ? config : undefined;
  const logic = (invoke as { src?: unknown } | undefined)?.src;
  return typeof logic === 'object' && logic !== null;
}

/** The context of a stored checkpoint, for a view (null when its snapshot cannot be read). */
export function contextOf(checkpoint: Pick<CheckpointRecord, 'snapshot' | 'unreadable'>): unknown {
  if (checkpoint.unreadable !== undefined) return null;
  return (parseJsonObject(checkpoint.snapshot)?.context as unknown) ?? null;
}

/** The text as a JSON object, or undefined when it is not one. */
export function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // not JSON: the caller says what that means
  }
  return undefined;
}

function isPersistedSnapshot(value: unknown): value is PersistedSnapshotJson {
  return typeof value === 'object' && value !== null && 'value' in value && 'status' in value;
}
