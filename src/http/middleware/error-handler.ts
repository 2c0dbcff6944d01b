import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { AgentsError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { AppEnv } from '../env.js';
import { HttpError, routeNotFound } from '../errors.js';

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
  checkpoint_pruned: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  invalid_event: 422,
  // Stored data that cannot be read back is our fault, not the caller's.
  corrupt_state: 500,
  schema_too_new: 500,
  // The runtime was closed under the request (the server is shutting down): try again, elsewhere or later.
  runtime_closed: 503,
};

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
    if (err instanceof AgentsError) {
      const status = STATUS_BY_CODE[err.code];
      if (status !== undefined) {
        if (status === 500) log.error({ err }, 'request failed on stored data');
        return c.json(body(err.code, err.message), status);
      }
    } else if (err instanceof HTTPException && err.status < 500) {
      const code = CODE_BY_STATUS[err.status] ?? 'bad_request';
      return c.json(body(code, sentence(err.message || code)), err.status as ContentfulStatusCode);
    }
    log.error({ err }, 'unhandled error while serving a request');
    return c.json(INTERNAL, 500);
  };
}

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
