import { OpenAPIHono } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { requestId } from 'hono/request-id';
import { basePath } from 'hono/route';
import { silentLogger, type Logger } from '../core/logger.js';
import { createMetrics, type Metrics } from '../observability/metrics.js';
import type { Runtime } from '../runtime/runtime.js';
import { createDashboard, DASHBOARD_AUTH } from './dashboard/index.js';
import { LOGIN_PATH, LOGOUT_PATH } from './dashboard/layout.js';
import type { AppEnv } from './env.js';
import { bearerAuth, type BearerAuthOptions } from './middleware/auth.js';
import { createErrorHandler, onNotFound } from './middleware/error-handler.js';
import { DEFAULT_BODY_LIMIT, jsonBody } from './middleware/json-body.js';
import { refuseWrites } from './middleware/read-only.js';
import { requestLogger } from './middleware/request-log.js';
import { httpTracing } from './middleware/tracing.js';
import { validationHook } from './middleware/validation.js';
import { registerActionRoutes } from './routes/actions.js';
import { registerAgentRoutes } from './routes/agents.js';
import { registerCheckpointRoutes } from './routes/checkpoints.js';
import { registerEventRoutes } from './routes/events.js';
import { registerMachineRoutes } from './routes/machines.js';
import type { RouteDeps } from './routes/openapi.js';
import { registerServiceRoutes } from './routes/service.js';
import { registerStreamRoutes } from './routes/stream.js';

export interface ServerOptions {
  runtime: Runtime;
  /**
   * When set, every route but /healthz, /readyz and the dashboard's login, logout and script needs
   * `Authorization: Bearer <token>` (or, from a browser, the token in the login cookie).
   */
  token?: string | undefined;
  /** Request lines and errors go here, as children carrying the request id (default: silent). */
  logger?: Logger;
  /** Largest accepted request body in bytes (default 1 MiB). */
  bodyLimit?: number;
  /** Default: a fresh registry with process metrics. */
  metrics?: Metrics;
  /** Abort it at shutdown: open SSE streams end so the HTTP server can close. */
  shutdown?: AbortSignal;
  /** The MCP servers configured for the reference agent, by name: the dashboard's spawn form names them. */
  mcpServers?: readonly string[];
}

/**
 * The HTTP layer of the contract. Each route parses (zod), makes one runtime call and renders a
 * view; errors become `{"error":{"code","message"}}` in middleware/error-handler.ts and nowhere else.
 * Routes live by resource under routes/, each module with its definitions and handlers.
 *
 * @example
 * const app = createServer({ runtime, token: process.env.DURABLE_AGENTS_TOKEN, logger });
 * serve({ fetch: app.fetch, port: 3000 });                 // @hono/node-server
 * const res = await app.request('/agents/a1');             // or in tests, with no port
 */
export function createServer({
  runtime,
  token,
  logger = silentLogger,
  bodyLimit = DEFAULT_BODY_LIMIT,
  metrics = createMetrics(),
  shutdown,
  mcpServers = [],
}: ServerOptions) {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  metrics.observeRuntime(runtime);
  app.onError(createErrorHandler(logger));
  app.notFound(onNotFound);
  // Middleware first: Hono runs handlers in the order they were added, and every route comes after.
  app.use(httpTracing(), requestId(), requestLogger(logger, metrics));
  if (token) app.use(mountedAuth(token, DASHBOARD_AUTH));
  // After authentication: a caller without the token learns nothing, not even that writes are off.
  if (runtime.readOnly) app.use(refuseWrites([LOGIN_PATH, LOGOUT_PATH]));

  const deps: RouteDeps = { runtime, metrics, jsonBody: jsonBody({ maxBytes: bodyLimit }), shutdown };
  registerServiceRoutes(app, deps);
  registerMachineRoutes(app, deps);
  registerAgentRoutes(app, deps);
  registerEventRoutes(app, deps);
  registerCheckpointRoutes(app, deps);
  registerActionRoutes(app, deps);
  registerStreamRoutes(app, deps);

  // The dashboard: HTML pages at / and under /ui/ (not in the OpenAPI document).
  app.route('/', createDashboard({ runtime, token, mcpServers }));

  return app;
}

/** The paths `bearerAuth` always leaves open (it compares them with whole request paths). */
const OPEN_PATHS = ['/healthz', '/readyz'];

/**
 * `bearerAuth`, wherever the app is mounted: the request path it compares with its open paths
 * (/healthz, /readyz, the login page, …) starts with the mount's prefix (`app.route('/agents-api', app)`), so
 * they are prefixed with it, read per request (a few prefixes kept).
 */
function mountedAuth(token: string, options: BearerAuthOptions): MiddlewareHandler {
  const byPrefix = new Map<string, MiddlewareHandler>();
  return (c, next) => {
    const prefix = basePath(c).replace(/\/+$/, '');
    let auth = byPrefix.get(prefix);
    if (!auth) {
      const at = (path: string) => prefix + path;
      auth = bearerAuth(token, {
        ...options,
        publicPaths: [...OPEN_PATHS, ...(options.publicPaths ?? [])].map(at),
        ...(options.loginPath !== undefined ? { loginPath: at(options.loginPath) } : {}),
      });
      if (byPrefix.size >= 16) byPrefix.clear(); // a mount under a path parameter has one per value
      byPrefix.set(prefix, auth);
    }
    return auth(c, next);
  };
}
