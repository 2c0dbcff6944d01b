import { Hono } from 'hono';
import type { Runtime } from './runtime/runtime.js';

/**
 * The HTTP layer: routes parse, call one runtime method, and render a view. Kept thin on purpose.
 */
export function createServer({ runtime }: { runtime: Runtime }): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/agents/:id', async (c) => c.json(await runtime.view(c.req.param('id'))));
  return app;
}
