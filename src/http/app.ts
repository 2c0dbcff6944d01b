import { OpenAPIHono } from '@hono/zod-openapi';
import { requestId } from 'hono/request-id';
import { streamAgentViews } from './agent-stream.js';
import { declaredHeadersOnly } from './declared-headers.js';
import { bearerAuth } from './auth.js';
import { createDashboard, DASHBOARD_AUTH } from './dashboard/index.js';
import { mountStatelyRoute } from './stately-route.js';
import { httpTracing } from './tracing.js';
import type { AppEnv } from './env.js';
import { createErrorHandler, onNotFound } from './error-handler.js';
import { DEFAULT_BODY_LIMIT, jsonBody } from './json-body.js';
import { requestLogger } from './request-log.js';
import * as routes from './routes.js';
import { DEFAULT_PAGE_SIZE } from './schemas.js';
import { validationHook } from './validation.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { createMetrics, type Metrics } from '../observability/metrics.js';
import type { InboxEvent } from '../store/store.js';
import type { Runtime } from '../runtime/runtime.js';

export interface ServerOptions {
  runtime: Runtime;
  /**
   * When set, every route but /healthz and the dashboard's login, logout and script needs
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
}

const OPENAPI_INFO = {
  openapi: '3.0.3',
  info: {
    title: 'durable-agents',
    version: '0.1.0',
    description: 'A durable runtime for LLM agents: XState v5 actors checkpointed at every transition.',
  },
  security: [{ bearer: [] }],
};

/**
 * The HTTP layer of the contract. Each route parses (zod), makes one runtime call and renders a
 * view; errors become `{"error":{"code","message"}}` in http/error-handler.ts and nowhere else.
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
}: ServerOptions) {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  metrics.observeRuntime(runtime);
  app.onError(createErrorHandler(logger));
  app.notFound(onNotFound);
  app.use(httpTracing(), requestId(), requestLogger(logger, metrics));
  if (token) app.use(bearerAuth(token, DASHBOARD_AUTH));
  app.on('POST', ['/agents', '/agents/:id/events', '/agents/:id/fork'], ...jsonBody({ maxBytes: bodyLimit }));
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'Needed when the server runs with --token',
  });

  app.openapi(routes.healthRoute, (c) => c.json({ ok: true as const }, 200));

  app.openapi(routes.listMachinesRoute, (c) => {
    const items = [...runtime.machines.values()].map((m) => ({
      name: m.name,
      version: m.version,
      states: [...m.states],
      events: [...m.eventTypes],
    }));
    return c.json({ items }, 200);
  });

  app.openapi(routes.getMachineRoute, (c) => {
    const { name } = c.req.valid('param');
    const machine = runtime.machine(name);
    const definition = machine.machine.toJSON() as unknown as Record<string, unknown>;
    return c.json({ name: machine.name, version: machine.version, definition }, 200);
  });

  mountStatelyRoute(app, runtime);

  app.openapi(routes.spawnRoute, async (c) => {
    const { machine, id } = c.req.valid('json');
    const { input } = c.get('body') as { input?: unknown }; // as sent: the machine's schema checks it
    const { view, created } = await runtime.spawn(machine, { ...(id === undefined ? {} : { id }), input });
    if (created) metrics.agentsSpawned.inc({ machine });
    c.get('log').info({ agentId: view.id, machine, created }, created ? 'agent spawned' : 'agent already existed');
    return created ? c.json(view, 201) : c.json(view, 200);
  });

  app.openapi(routes.listAgentsRoute, async (c) => {
    const { limit = DEFAULT_PAGE_SIZE, ...filters } = c.req.valid('query');
    return c.json(await runtime.list({ ...definedOnly(filters), limit }), 200); // a bad cursor: the store's 400
  });

  app.openapi(routes.getAgentRoute, async (c) => c.json(await runtime.view(c.req.valid('param').id), 200));

  app.openapi(declaredHeadersOnly(app, routes.sendEventRoute), async (c) => {
    const { id } = c.req.valid('param');
    const key = c.req.valid('header')['Idempotency-Key'];
    c.req.valid('json'); // checked: an object with a string `type`
    const event = c.get('body') as InboxEvent; // as sent: the machine's schema checks the payload
    const { seq, duplicate } = await runtime.send(id, event, key);
    if (duplicate) c.header('Idempotent-Replayed', 'true');
    else metrics.eventsAccepted.inc({ type: event.type });
    c.get('log').info({ seq, type: event.type, duplicate }, duplicate ? 'event replayed (same Idempotency-Key)' : 'event committed');
    return c.json({ seq }, 202);
  });

  app.openapi(routes.listCheckpointsRoute, async (c) => {
    const checkpoints = await runtime.checkpoints(c.req.valid('param').id);
    const items = checkpoints.map(({ seq, state, progress, createdAt, status, eventType }) => ({ seq, state, progress, createdAt, status, eventType }));
    return c.json({ items }, 200);
  });

  app.openapi(routes.getCheckpointRoute, async (c) => {
    const { id, seq } = c.req.valid('param');
    return c.json(await runtime.checkpoint(id, seq), 200);
  });

  app.openapi(routes.forkRoute, async (c) => {
    const { id } = c.req.valid('param');
    const { checkpoint, id: newId } = c.req.valid('json');
    const view = await runtime.fork(id, checkpoint, newId);
    c.get('log').info({ from: { agentId: id, seq: checkpoint }, forkId: view.id }, 'agent forked');
    return c.json(view, 201);
  });

  app.openapi(routes.listActionsRoute, async (c) => {
    const actions = await runtime.actions(c.req.valid('param').id);
    const items = actions.map(({ seq, action, payload, result, createdAt }) => ({ seq, action, payload, result, createdAt }));
    return c.json({ items }, 200);
  });

  app.openapi(routes.streamRoute, (c) =>
    streamAgentViews(c, runtime, c.req.valid('param').id, shutdown ? { shutdown } : {}),
  );

  app.openapi(routes.stopRoute, async (c) => {
    await runtime.stop(c.req.valid('param').id);
    c.get('log').info('agent stopped');
    return c.body(null, 204);
  });

  app.openapi(routes.metricsRoute, async (c) => c.text(await metrics.render(), 200, { 'Content-Type': metrics.contentType }));

  // The dashboard: HTML pages at / and under /ui/ (not in the OpenAPI document).
  app.route('/', createDashboard({ runtime, token }));

  let document: unknown;
  app.openapi(routes.openApiRoute, (c) => {
    document ??= app.getOpenAPIDocument(OPENAPI_INFO);
    return c.json(document as Record<string, unknown>, 200);
  });

  return app;
}

function definedOnly<T extends Record<string, unknown>>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as never;
}
