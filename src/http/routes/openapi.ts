/**
 * What every route module shares: the app type, its dependencies, and the OpenAPI fragments that
 * recur (error responses, JSON bodies). Each module under routes/ holds its route definitions and
 * their handlers, and registers both through one `register…Routes(app, deps)`.
 */
import type { OpenAPIHono, RouteConfig, z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import type { Metrics } from '../../observability/metrics.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { AppEnv } from '../env.js';
import { ErrorSchema } from './schemas.js';

export type ApiApp = OpenAPIHono<AppEnv>;

/** What createServer hands the route modules; each takes the part it uses. */
export interface RouteDeps {
  runtime: Runtime;
  metrics: Metrics;
  /** The checks of middleware/json-body.ts, built once, for every route that takes a JSON body. */
  jsonBody: readonly MiddlewareHandler<AppEnv>[];
  /** Aborted at shutdown: open SSE streams end so the HTTP server can close. */
  shutdown: AbortSignal | undefined;
}

const ERROR_TEXT = {
  400: 'Malformed JSON, an invalid field or parameter (`malformed_json`, `invalid_input`, `invalid_id`)',
  401: 'Missing or wrong bearer token (`unauthorized`)',
  404: 'Unknown agent, machine, checkpoint or route (`not_found`)',
  409: 'Conflict with the stored state (`conflict`), or an event for an agent in error (`agent_in_error`)',
  410: 'The checkpoint was pruned by the retention policy (`checkpoint_pruned`)',
  413: 'Body over the limit (`payload_too_large`)',
  415: 'Body not sent as application/json (`unsupported_media_type`)',
  422: 'Event not valid for the machine (`invalid_event`), or an Idempotency-Key already used for another event (`idempotency_key_reused`)',
  429: "The agent's inbox is full (`inbox_full`, with `Retry-After`): nothing was stored; send it again later",
  503: 'The store takes no writes now (`store_unavailable`, with `reason` and `Retry-After`: disk full, file read-only or gone, database out of reach), or the server is shutting down (`runtime_closed`)',
} as const;

type ErrorStatus = keyof typeof ERROR_TEXT;

/** What a route that takes a JSON body may answer besides its own errors. */
export const BODY_ERRORS = [400, 413, 415] as const;

/**
 * The error responses of a route: 401 always (with --token every route but /healthz needs one), 503
 * always (any route may meet a store that takes no writes, or a server shutting down), plus `statuses`.
 */
export function errorResponses<S extends ErrorStatus>(...statuses: S[]) {
  return Object.fromEntries(
    [401, 503, ...statuses].map((s) => [s, { description: ERROR_TEXT[s as ErrorStatus], content: { 'application/json': { schema: ErrorSchema } } }]),
  ) as { [K in S | 401 | 503]: { description: string; content: { 'application/json': { schema: typeof ErrorSchema } } } };
}

export const jsonResponse = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

export const jsonRequestBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

/**
 * The route with the JSON body checks (415, 413, depth, syntax) in front of its zod validators.
 * Route middleware is not part of the OpenAPI document: the route is documented unchanged.
 */
export function withJsonBody<R extends RouteConfig>(route: R, jsonBody: RouteDeps['jsonBody']): R {
  return { ...route, middleware: [...jsonBody] };
}
