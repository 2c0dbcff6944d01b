/** The service itself: liveness, Prometheus metrics, and this API's OpenAPI document. */
import { createRoute, z } from '@hono/zod-openapi';
import { errorResponses, jsonResponse, type ApiApp, type RouteDeps } from './openapi.js';

const HealthSchema = z.object({ ok: z.literal(true) }).openapi('Health');

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
export function registerServiceRoutes(app: ApiApp, { metrics }: Pick<RouteDeps, 'metrics'>): void {
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'Needed when the server runs with --token',
  });

  app.openapi(healthRoute, (c) => c.json({ ok: true as const }, 200));

  app.openapi(metricsRoute, async (c) => c.text(await metrics.render(), 200, { 'Content-Type': metrics.contentType }));

  let document: unknown;
  app.openapi(openApiRoute, (c) => {
    document ??= app.getOpenAPIDocument(OPENAPI_INFO);
    return c.json(document as Record<string, unknown>, 200);
  });
}
