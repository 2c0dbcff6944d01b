import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { Logger } from '../../core/logger.js';
import type { HttpMetrics } from '../../observability/metrics.js';
import type { AppEnv } from '../env.js';
import { truncate } from '../../core/errors.js';
import { ID_PATTERN } from '../../core/ids.js';

/** Polled by machines, not people: logged at debug so they do not drown the log. */
const QUIET_ROUTES = new Set(['/healthz', '/metrics']);

/**
 * Gives each request a pino child logger carrying its request id (and the agent id on
 * /agents/:id/... routes), logs one line when the response is ready, and counts it in metrics.
 * Runs after `requestId()`, which sets (or accepts a well-formed) `X-Request-Id`.
 */
export function requestLogger(log: Logger, metrics?: HttpMetrics): MiddlewareHandler<AppEnv> {
  return async function logRequest(c, next) {
    const started = performance.now();
    const agentId = agentIdOf(c.req.path);
    const child = log.child(agentId ? { reqId: c.get('requestId'), agentId } : { reqId: c.get('requestId') });
    c.set('log', child);
    await next();
    const seconds = (performance.now() - started) / 1000;
    const route = routeOf(c);
    const status = c.res.status;
    metrics?.observeRequest(c.req.method, route, status, seconds);
    const level = status >= 500 ? 'error' : QUIET_ROUTES.has(route) ? 'debug' : 'info';
    child[level]({ method: c.req.method, path: truncate(c.req.path, 300), route, status, ms: Math.round(seconds * 1000) }, 'request');
  };
}

/** The route pattern that answered (`/agents/:id`), never the raw path: metrics labels must stay few. */
export function routeOf(c: Context): string {
  const route = matchedRoutes(c).findLast((r) => r.method !== 'ALL');
  return route?.path ?? 'unmatched';
}

/** The agent id of an `/agents/:id/...` path, when it is a valid one. */
export function agentIdOf(path: string): string | undefined {
  const match = /^\/agents\/([^/]+)/.exec(path);
  if (!match) return undefined;
  try {
    const id = decodeURIComponent(match[1]!);
    return ID_PATTERN.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}
