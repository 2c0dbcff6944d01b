/**
 * What an agent in `error` shows of why (its view's `error`): the reason stored with its row when
 * it was quarantined or its statechart threw. Its codes are part of the HTTP contract
 * (docs/http-api.md, "The agent view"), so a stored error whose code is not one of ours (a
 * machine's own exception may carry any `code`) is shown as `machine_error`.
 */
import { serializeError, type QuarantineReason, type SerializedError } from '../core/errors.js';

export interface AgentErrorView {
  code: AgentErrorCode;
  message: string;
}

/** The quarantine reasons, and `machine_error`: an action, guard or actor of its machine threw, or its context could not be stored. */
export type AgentErrorCode = QuarantineReason | 'machine_error';

const QUARANTINE_REASONS: ReadonlySet<string> = new Set<QuarantineReason>(['version_unknown', 'snapshot_unreadable', 'restore_failed']);

/** The view's `error` of an agent in error, from the error stored with its row (null: none was recorded). */
export function agentErrorView(stored: SerializedError | null): AgentErrorView {
  if (!stored) return { code: 'machine_error', message: 'The agent ended in error; no reason was recorded.' };
  // Only a quarantine's reason is ours: a machine's exception may carry any code.
  if (stored.name !== 'CorruptStateError') return { code: 'machine_error', message: stored.message };
  // Quarantined before reasons were stored (code `corrupt_state`): a stored state it could not restore.
  const code = stored.code !== undefined && QUARANTINE_REASONS.has(stored.code) ? (stored.code as QuarantineReason) : 'restore_failed';
  return { code, message: stored.message };
}

/** The view's `error` of an agent whose machine ended in error in memory, before its row records the error. */
export function thrownErrorView(error: unknown): AgentErrorView {
  return { code: 'machine_error', message: serializeError(error).message };
}
