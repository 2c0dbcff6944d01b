import type { MiddlewareHandler } from 'hono';
import { ReadOnlyStoreError, truncate } from '../../core/errors.js';
import type { AppEnv } from '../env.js';

/** Methods that only read: every route that writes (spawn, events, stop, fork) takes another. */
const READING_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * For a read-only runtime (`serve --read-only`; app.ts adds it then): every write route answers
 * `503 read_only` before its body is read or validated. One place for every route, present and
 * future, and for the dashboard's forms, which post to the same routes. `open`: paths whose POSTs
 * write nothing to the store (the dashboard's login and logout set a cookie), compared with the end
 * of the request path so that a mounted app matches too.
 */
export function refuseWrites(open: readonly string[] = []): MiddlewareHandler<AppEnv> {
  return async function readOnlyGate(c, next) {
    if (READING_METHODS.has(c.req.method) || open.some((path) => c.req.path.endsWith(path))) return next();
    throw new ReadOnlyStoreError(`${c.req.method} ${truncate(c.req.path, 200)}`);
  };
}
