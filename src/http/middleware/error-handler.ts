import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { AgentsError, StoreUnavailableError } from '../../core/errors.js';
import { asStoreUnavailable } from '../../store/unavailable.js';
import type { Logger } from '../../core/logger.js';
import type { AppEnv } from '../env.js';
import { HttpError, routeNotFound } from '../errors.js';
import { clientWentAway } from './node-request.js';

/** The one table from error codes to statuses. A code missing here is a bug: it answers 500. */
const STATUS_BY_CODE: Record<string, ContentfulStatusCode> = {
  invalid_input: 400,
  invalid_id: 400,
  malformed_json: 400,
  // A webhook or tool URL the outbound policy refuses (at spawn): the caller's input.
  outbound_not_allowed: 400,
  unauthorized: 401,
  not_found: 404,
  conflict: 409,
  // The agent's stored state cannot be used, or its machine threw: its view's `error` says which.
  agent_in_error: 409,
  checkpoint_pruned: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  invalid_event: 422,
  idempotency_key_reused: 422,
  // The agent's inbox is full: slow down (with Retry-After); nothing was stored.
  inbox_full: 429,
  // Stored data that cannot be read back is our fault, not the caller's.
  corrupt_state: 500,
  schema_too_new: 500,
  // The runtime was closed under the request (the server is shutting down): try again, elsewhere or later.
  runtime_closed: 503,
  // A process serving a store read-only (serve --read-only): the one that runs the agents takes writes.
  read_only: 503,
};

/** nginx's status for a request its client abandoned: a 4xx, because the client ended it. */
const CLIENT_CLOSED_REQUEST = 499 as ContentfulStatusCode;

/** Hono's own exceptions (validator, media-type gate, body limit) carry only a status. */
const CODE_BY_STATUS: Partial<Record<number, string>> = {
  400: 'malformed_json',
  401: 'unauthorized',
  404: 'not_found',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

export interface ErrorBody {
  error: { code: string; message: string };
}

const INTERNAL: ErrorBody = { error: { code: 'internal', message: 'Something went wrong on our side; the error was logged.' } };

/**
 * The only place an error becomes a response: `{"error":{"code","message"}}` with its status.
 * Anything unexpected is a 500 whose stack goes to the log, never to the caller.
 */
export function createErrorHandler(fallbackLog: Logger): ErrorHandler<AppEnv> {
  return function onError(err, c) {
    const log = requestLog(c, fallbackLog);
    if (err instanceof HttpError) return c.json(body(err.code, err.message), err.status, err.headers);
    // A read that failed because the client hung up (mid-body): not the server's failure, and anyone
    // could inflate the 5xx rate with it. Nobody reads this answer; metrics and the log see a 499.
    if (!(err instanceof AgentsError) && clientWentAway(c)) {
      log.info({ reason: err instanceof Error ? err.message : String(err) }, 'the client hung up before the request was answered');
      return c.json(body('client_closed_request', 'The client closed the connection before the request was answered.'), CLIENT_CLOSED_REQUEST);
    }
    // Ours, or a driver's error from a read the store failed the same way (SQLite, Postgres): a 503, never a 500.
    const unavailable = err instanceof AgentsError ? (err instanceof StoreUnavailableError ? err : undefined) : asStoreUnavailable(err, { errno: false });
    if (unavailable) return storeUnavailable(c, unavailable);
    if (err instanceof AgentsError) {
      const status = STATUS_BY_CODE[err.code];
      if (status !== undefined) {
        if (status === 500) log.error({ err }, 'request failed on stored data');
        // An error that says when to come back (a full inbox) says it in Retry-After, in seconds.
        const retryAfterMs = (err as { retryAfterMs?: unknown }).retryAfterMs;
        const headers = typeof retryAfterMs === 'number' ? { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) } : undefined;
        return c.json(body(err.code, err.message), status, headers);
      }
    } else if (err instanceof HTTPException && err.status < 500) {
      const code = CODE_BY_STATUS[err.status] ?? 'bad_request';
      return c.json(body(code, sentence(err.message || code)), err.status as ContentfulStatusCode);
    }
    log.error({ err }, 'unhandled error while serving a request');
    return c.json(INTERNAL, 500);
  };
}

/**
 * `503 {"error":{"code":"store_unavailable","message","reason"}}` with `Retry-After` (seconds, the
 * runtime's backoff; 1 when it has none). The message is the reason's, not the store's own (which
 * names files and hosts): those go to the log, once, from the runtime.
 */
function storeUnavailable(c: Context<AppEnv>, err: StoreUnavailableError) {
  const seconds = Math.max(1, Math.ceil((err.retryAfterMs ?? 1000) / 1000));
  const message = `The store takes no writes now (${STORE_REASONS[err.reason]}); nothing of this request was stored. Try again in ${seconds} s.`;
  return c.json({ error: { code: err.code, message, reason: err.reason } }, 503, { 'Retry-After': String(seconds) });
}

const STORE_REASONS: Record<StoreUnavailableError['reason'], string> = {
  disk_full: 'its disk is full',
  read_only: 'its file or database is read-only',
  io_error: 'its disk reports I/O errors',
  file_gone: 'its database file was deleted or replaced',
  database_unreachable: 'its database cannot be reached',
};

export const onNotFound: NotFoundHandler = (c) => {
  const err = routeNotFound(c.req.method, c.req.path);
  return c.json(body(err.code, err.message), err.status);
};

function body(code: string, message: string): ErrorBody {
  return { error: { code, message } };
}

function sentence(text: string): string {
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

function requestLog(c: Context<AppEnv>, fallback: Logger): Logger {
  // Unset when the error happened before the request logger ran.
  return (c.get('log') as Logger | undefined) ?? fallback;
}
