/**
 * `durable-agents/http`: the service's HTTP app (the API of the contract and the dashboard) over a
 * runtime of your own, to serve or to mount in your own Hono server.
 *
 * @example
 * const app = new Hono();
 * app.route('/agents-api', createServer(runtime, { token: process.env.DURABLE_AGENTS_TOKEN }));
 * serve({ fetch: app.fetch, port: 3000 }); // @hono/node-server
 */
import type { Runtime } from '../runtime/runtime.js';
import { createServer as createApp, type ServerOptions } from './app.js';

/** What `createServer` takes besides the runtime; every option has a default. */
export type HttpServerOptions = Omit<ServerOptions, 'runtime'>;

/** The app `createServer` returns: a Hono (OpenAPIHono) app, for `app.route(prefix, …)`, `fetch` or `request`. */
export type HttpServer = ReturnType<typeof createApp>;

/**
 * The Hono app `durable-agents serve` runs, over `runtime`: every route of the HTTP API, /healthz,
 * /metrics, /openapi.json and the dashboard. With no options: no token (every route open), nothing
 * logged, a fresh metrics registry, 1 MiB bodies. Closing the runtime is the caller's; pass
 * `shutdown` (an AbortSignal) to end open SSE streams when the server closes.
 *
 * Mounted under a prefix (`app.route('/agents-api', createServer(runtime))`) the API answers there
 * and /healthz stays open with a token; the dashboard's links, forms and script assume the app is at
 * `/`: mount it at `/` (or serve it on a port of its own) to use the dashboard.
 */
export function createServer(runtime: Runtime, options: HttpServerOptions = {}): HttpServer {
  return createApp({ ...options, runtime });
}

export type { Metrics } from '../observability/metrics.js';
export { createMetrics } from '../observability/metrics.js';
export type { Logger } from '../core/logger.js';
