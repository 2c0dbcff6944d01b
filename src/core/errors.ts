/**
 * One error family. Every error the runtime throws on purpose carries a snake_case `code` that the
 * HTTP layer returns verbatim; retryability lives on the error, not in string matching.
 */
export abstract class AgentsError extends Error {
  abstract readonly code: string;
  override get name(): string {
    return this.constructor.name;
  }
}

export class NotFoundError extends AgentsError {
  readonly code = 'not_found';
  constructor(
    readonly kind: 'agent' | 'machine' | 'checkpoint' | 'route',
    readonly id: string,
  ) {
    // Ids come from callers (a machine name from a URL can be anything): echo a bounded one.
    super(`No ${kind} with id "${truncate(id, 128)}".`);
  }
}

/** A checkpoint the retention policy pruned: it existed, and is gone for good. */
export class PrunedError extends AgentsError {
  readonly code = 'checkpoint_pruned';
  constructor(
    readonly agentId: string,
    readonly seq: number,
    readonly prunedBefore: number,
  ) {
    super(`Checkpoint ${seq} of agent "${truncate(agentId, 128)}" was pruned by the retention policy: the oldest kept is ${prunedBefore}.`);
  }
}

export class ConflictError extends AgentsError {
  readonly code = 'conflict';
}

export class InvalidInputError extends AgentsError {
  readonly code = 'invalid_input';
}

export class InvalidIdError extends AgentsError {
  readonly code = 'invalid_id';
  constructor(readonly id: string) {
    super(`Ids are 1–128 characters from A-Z a-z 0-9 . _ - : (got ${describeId(id)}).`);
  }
}

export class InvalidEventError extends AgentsError {
  readonly code = 'invalid_event';
  constructor(
    readonly machine: string,
    readonly type: string,
    readonly known: readonly string[],
    detail?: string,
  ) {
    super(
      detail ??
        `Machine "${machine}" does not accept events of type "${type}"; known types: ${known.join(', ')}.`,
    );
  }
}

/**
 * A URL or address the outbound policy does not let the server reach (a webhook, an HTTP tool):
 * requests whose target API callers choose must not reach what only the server can reach.
 */
export class OutboundNotAllowedError extends AgentsError {
  readonly code = 'outbound_not_allowed';
  constructor(
    readonly host: string,
    readonly reason: string,
  ) {
    super(`Outbound requests to "${truncate(host, 256)}" are not allowed: ${reason}.`);
  }
}

/**
 * A machine the durability linter finds errors in (docs/machines.md, "The durability linter"):
 * refused at registration, so `createRuntime` refuses it, rather than checkpointing agents it could
 * not restore correctly. The message lists each error with its state path.
 */
export class MachineNotDurableError extends AgentsError {
  readonly code = 'machine_not_durable';
  constructor(
    readonly machine: string,
    readonly errors: readonly { path: string; code: string; message: string }[],
  ) {
    const count = errors.length === 1 ? '1 error' : `${errors.length} errors`;
    super(
      `Machine "${truncate(machine, 128)}" is refused: the runtime cannot make it durable (${count}; errors cannot be ignored).\n` +
        errors.map((e) => `  ${e.path}  ${e.code}: ${e.message}`).join('\n'),
    );
  }
}

/** The store holds data written by a newer version of this program: refuse rather than guess. */
export class SchemaTooNewError extends AgentsError {
  readonly code = 'schema_too_new';
  constructor(current: number, latest: number) {
    super(`The database is at schema version ${current}, but this build knows only up to ${latest}. Upgrade durable-agents.`);
  }
}

/**
 * Why an agent's stored state cannot be used, as its view's `error.code` says (docs/http-api.md):
 * - `version_unknown`: its checkpoint was written by a version of its machine this process has no upgrade from;
 * - `snapshot_unreadable`: its snapshot cannot be read back (not JSON, not an XState snapshot, a part or delta it needs is not stored);
 * - `restore_failed`: it reads, but XState cannot start from it (a state or actor the machine does not have, an upgrade that failed).
 */
export type QuarantineReason = 'version_unknown' | 'snapshot_unreadable' | 'restore_failed';

/** A stored snapshot that cannot be restored: the agent is quarantined, the runtime goes on. */
export class CorruptStateError extends AgentsError {
  readonly code = 'corrupt_state';
  constructor(
    readonly agentId: string,
    message: string,
    readonly reason: QuarantineReason = 'restore_failed',
  ) {
    super(`Agent "${agentId}" cannot be restored: ${message}`);
  }
}

/**
 * An event for an agent in `error` (quarantined, or its statechart threw): it would never be taken,
 * so nothing is stored. Its view's `error` says why; a fork from a checkpoint carries on its work.
 */
export class AgentInErrorError extends AgentsError {
  readonly code = 'agent_in_error';
  constructor(
    readonly agentId: string,
    reason: { code: string; message: string },
  ) {
    super(`Agent "${truncate(agentId, 128)}" is in error (${reason.code}: ${truncate(reason.message, 300)}); it takes no events. Fork it from a checkpoint to carry on.`);
  }
}

/** An `Idempotency-Key` already used for another event (another type or payload): nothing is stored. */
export class IdempotencyKeyReusedError extends AgentsError {
  readonly code = 'idempotency_key_reused';
  constructor(
    readonly agentId: string,
    readonly key: string,
    readonly seq: number,
  ) {
    super(`Idempotency-Key "${truncate(key, 128)}" was used for another event (seq ${seq}) of agent "${truncate(agentId, 128)}"; use a new key for a new event.`);
  }
}

/**
 * A write for an agent this process may no longer write for: another process runs it now (a shared
 * store: its lease passed to that process), or it has ended (stopped, done, failed). The write
 * changed nothing; this process must let the agent go, not retry.
 */
export class FencedError extends AgentsError {
  readonly code = 'fenced';
  constructor(
    readonly agentId: string,
    why = 'is run by another process now',
  ) {
    super(`Agent "${agentId}" ${why}; this process's write for it was refused.`);
  }
}

/**
 * Why the store takes no writes now: its disk is full, its file is read-only or gone (deleted or
 * replaced under the process), the disk reports I/O errors, or the database cannot be reached.
 */
export type StoreUnavailableReason = 'disk_full' | 'read_only' | 'io_error' | 'file_gone' | 'database_unreachable';

/**
 * The store cannot take writes now, or could not be opened (said as a sentence at start: `new
 * StoreUnavailableError(location, cause)`). Not a bug and not the caller's fault: over HTTP a 503
 * with `Retry-After`, and the runtime holds its agents' writes and retries them
 * (runtime/committer.ts). `retryAfterMs`: when to try again, once the runtime knows its backoff.
 */
export class StoreUnavailableError extends AgentsError {
  readonly code = 'store_unavailable';
  readonly reason: StoreUnavailableReason;
  readonly retryAfterMs: number | undefined;
  constructor(
    location: string,
    cause: unknown,
    more: { reason?: StoreUnavailableReason; message?: string; retryAfterMs?: number } = {},
  ) {
    super(more.message ?? `Cannot open the store at ${location}: ${cause instanceof Error ? cause.message : String(cause)}.`, { cause });
    this.reason = more.reason ?? 'database_unreachable';
    this.retryAfterMs = more.retryAfterMs;
  }

  /** A store that was open and now takes no writes, for `reason`. */
  static because(reason: StoreUnavailableReason, message: string, cause?: unknown): StoreUnavailableError {
    return new StoreUnavailableError('', cause, { reason, message });
  }

  /** The same failure, saying when to try again. */
  retryingIn(ms: number): StoreUnavailableError {
    return new StoreUnavailableError('', this.cause, { reason: this.reason, message: this.message, retryAfterMs: ms });
  }
}

/**
 * Another live process holds the SQLite file's writer lock: one process runs a file's agents. The
 * holder's pid (and host, start) come from the note it left beside the lock, for the message only;
 * undefined when it left none yet.
 */
export class StoreLockedError extends AgentsError {
  readonly code = 'store_locked';
  constructor(
    readonly file: string,
    readonly holderPid: number | undefined,
    readonly holder: { host?: string; since?: string } = {},
  ) {
    const who = holderPid === undefined ? 'another process' : `process ${holderPid}${holder.host ? ` on ${holder.host}` : ''}${holder.since ? ` (running since ${holder.since})` : ''}`;
    super(
      `${file} is in use: ${who} runs its agents, and a SQLite file has one writer. ` +
        'Stop that process first, or open this one read-only (serve --read-only; openSqliteStore(file, { readOnly: true })) to read what is stored without running anything.',
    );
  }
}

/**
 * A write to a store this process opened read-only (`serve --read-only`, `{ readOnly: true }`): it
 * reads what is stored and runs nothing. Over HTTP a 503: the process that runs the agents takes writes.
 */
export class ReadOnlyStoreError extends AgentsError {
  readonly code = 'read_only';
  constructor(readonly operation: string) {
    super(`Cannot ${operation}: this process opened the store read-only; it serves what is stored and runs nothing. Send writes to the process that runs the agents.`);
  }
}

/**
 * The runtime was closed (`runtime.close()`): it takes no more commands or queries. Over HTTP a
 * 503: the server is shutting down, another process (or this one, restarted) answers.
 */
export class RuntimeClosedError extends AgentsError {
  readonly code = 'runtime_closed';
  constructor(readonly operation: string) {
    super(`Cannot ${operation}: the runtime is closed.`);
  }
}

export type FailureKind = 'transient' | 'permanent';

/**
 * A failed I/O step (LLM call, webhook). Thrown by the runtime's actor implementations so that the
 * statechart can decide, from plain data, whether to back off and retry or to park in `failed`.
 */
export class StepError extends AgentsError {
  readonly code: string;
  readonly kind: FailureKind;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  constructor(
    kind: FailureKind,
    code: string,
    message: string,
    extra: { status?: number; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.kind = kind;
    this.code = code;
    this.status = extra.status;
    this.retryAfterMs = extra.retryAfterMs;
  }
}

/** Plain JSON of an error, for logs, the action log and stored agent rows (an Error stringifies to {}). */
export interface SerializedError {
  name: string;
  message: string;
  code?: string;
  stack?: string;
}

export function serializeError(err: unknown): SerializedError {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return {
      name: err.name,
      message: err.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(err.stack ? { stack: err.stack } : {}),
    };
  }
  return { name: 'NonError', message: safeString(err) };
}

function safeString(value: unknown): string {
  try {
    return typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function describeId(id: string): string {
  if (id.length > 40) return `${id.length} characters`;
  return JSON.stringify(id);
}

/** `text`, or its first `max` characters and its length: for echoing caller input in messages and logs. */
/** At most `max` characters, the last one an ellipsis when cut: for labels and short messages. */
export function shorten(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}

/**
 * An agent's inbox holds `maxInbox` events (and work it accepted but has not done, e.g. the
 * reference agent's queued tasks): it cannot keep up. Over HTTP a 429 with `Retry-After`; nothing
 * was stored, so the sender sends it again later.
 */
export class InboxFullError extends AgentsError {
  readonly code = 'inbox_full';
  /** When to try again: about what the agent needs to take a few of its waiting events. */
  readonly retryAfterMs = 1_000;
  constructor(
    readonly agentId: string,
    readonly waiting: number,
    readonly maxInbox: number,
  ) {
    super(`Agent ${agentId} has ${waiting} events waiting (at most ${maxInbox}): send this one again later.`);
  }
}
