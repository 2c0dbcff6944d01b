/** The service itself: liveness, readiness, Prometheus metrics, and this API's OpenAPI document. */
import { createRoute, z } from '@hono/zod-openapi';
import { errorResponses, jsonResponse, type ApiApp, type RouteDeps } from './openapi.js';

const HealthSchema = z.object({ ok: z.literal(true) }).openapi('Health');
const NotReadySchema = z
  .object({
    ok: z.literal(false),
    reason: z.enum(['disk_full', 'read_only', 'io_error', 'file_gone', 'database_unreachable']).openapi({ example: 'disk_full' }),
  })
  .openapi('NotReady');

const OPENAPI_INFO = {
  openapi: '3.0.3',
  info: {
    title: 'durable-agents',
    version: '0.1.0',
    description: 'A durable runtime for LLM agents: XState v5 actors checkpointed at every transition.',
  },
  security: [{ bearer: [] }],
};

const healthRoute = createRoute({
  method: 'get',
  path: '/healthz',
  tags: ['service'],
  summary: 'Liveness: the store is open and recovery has started',
  security: [],
  responses: { 200: jsonResponse(HealthSchema, 'The service is up') },
});

const readyRoute = createRoute({
  method: 'get',
  path: '/readyz',
  tags: ['service'],
  summary: 'Readiness: the store takes writes',
  description:
    "503 while it does not (disk full, file read-only or gone, database out of reach): requests that write get 503 store_unavailable, agents' writes are held and retried, and the service resumes by itself when the store takes writes again.",
  security: [],
  responses: {
    200: jsonResponse(HealthSchema, 'The store takes writes'),
    503: jsonResponse(NotReadySchema, 'The store takes no writes now, for `reason`'),
  },
});

const metricsRoute = createRoute({
  method: 'get',
  path: '/metrics',
  tags: ['service'],
  summary: 'Prometheus metrics',
  responses: {
    200: { description: 'Prometheus text format', content: { 'text/plain': { schema: z.string() } } },
    ...errorResponses(),
  },
});

const openApiRoute = createRoute({
  method: 'get',
  path: '/openapi.json',
  tags: ['service'],
  summary: 'This document',
  responses: {
    200: { description: 'OpenAPI 3 document', content: { 'application/json': { schema: z.record(z.string(), z.unknown()) } } },
    ...errorResponses(),
  },
});

/** The document covers every route registered on `app`, whenever it was registered: it is built at the first request. */
export function registerServiceRoutes(app: ApiApp, { metrics, runtime }: Pick<RouteDeps, 'metrics' | 'runtime'>): void {
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'Needed when the server runs with --token',
  });

  app.openapi(healthRoute, (c) => c.json({ ok: true as const }, 200));

  // From memory (the runtime's last commit or probe, at most ~1 s old): no store read, so it answers while the store does not.
  app.openapi(readyRoute, (c) => {
    const readiness = runtime.storeReadiness();
    if (readiness.ready) return c.json({ ok: true as const }, 200);
    return c.json({ ok: false as const, reason: readiness.reason }, 503, { 'Retry-After': String(readiness.retryAfterSeconds) });
  });

  app.openapi(metricsRoute, async (c) => c.text(await metrics.render(), 200, { 'Content-Type': metrics.contentType }));

  let document: unknown;
  app.openapi(openApiRoute, (c) => {
    document ??= app.getOpenAPIDocument(OPENAPI_INFO);
    return c.json(document as Record<string, unknown>, 200);
  });
}
