// `durable-agents/http`: createServer(runtime, options) is the app `serve` runs, and a user's own
// Hono app mounts it under a prefix, driven here through `app.request()` (no port). The region
// below is the example docs/http-api.md shows.
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer } from '../../src/http/index.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { AgentView } from '../../src/runtime/views.js';
import { isIdleWithProgress, runtimesClosedAfterEach } from '../helpers/runtime.js';

// #region mount
function myServer(runtime: Runtime, token?: string): Hono {
  const app = new Hono();
  app.get('/', (c) => c.text('my own routes'));
  // The API under /agents-api: /agents-api/healthz, /agents-api/agents/:id, …
  app.route('/agents-api', createServer(runtime, { token }));
  return app;
}
// #endregion

const JSON_HEADERS = { 'content-type': 'application/json' };

describe('createServer mounted in your own Hono app', () => {
  const start = runtimesClosedAfterEach();
  let closing: Runtime | undefined;
  afterEach(async () => {
    await closing?.close();
    closing = undefined;
  });

  it('answers /healthz, POST /agents and GET /agents/:id under the prefix, beside its own routes', async () => {
    const { runtime } = await start();
    const app = myServer(runtime);

    expect(await (await app.request('/')).text()).toBe('my own routes');
    const health = await app.request('/agents-api/healthz');
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true });

    const created = await app.request('/agents-api/agents', {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ machine: 'agent', id: 'a1', input: { tasks: ['t1'] } }),
    });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ id: 'a1', machine: 'agent', status: 'active' });

    await runtime.waitFor('a1', isIdleWithProgress(1), { timeoutMs: 5000 });
    const got = await app.request('/agents-api/agents/a1');
    expect(got.status).toBe(200);
    expect((await got.json()) as AgentView).toMatchObject({ id: 'a1', state: 'idle', progress: 1 });

    // The API's errors keep their shape under the prefix.
    const missing = await app.request('/agents-api/agents/nobody');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: 'not_found' } });
    // Nothing answers at the root for the API's paths.
    expect((await app.request('/agents/a1')).status).toBe(404);
  });

  it('with a token: /healthz stays open under the prefix, every other route needs the bearer token', async () => {
    const { runtime } = await start();
    const app = myServer(runtime, 's3cret');

    expect((await app.request('/agents-api/healthz')).status).toBe(200);
    const refused = await app.request('/agents-api/agents');
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ error: { code: 'unauthorized' } });
    const listed = await app.request('/agents-api/agents', { headers: { authorization: 'Bearer s3cret' } });
    expect(listed.status).toBe(200);
    // The user's own routes are theirs: the token does not guard them.
    expect((await app.request('/')).status).toBe(200);
  });

  it('works with no options, and is the app serve runs: /openapi.json, /metrics and the dashboard at its root', async () => {
    const { runtime } = await start();
    const app = createServer(runtime);
    expect((await app.request('/healthz')).status).toBe(200);
    expect((await app.request('/openapi.json')).status).toBe(200);
    expect((await app.request('/metrics')).status).toBe(200);
    const dashboard = await app.request('/', { headers: { accept: 'text/html' } });
    expect(dashboard.status).toBe(200);
    expect(dashboard.headers.get('content-type')).toMatch(/text\/html/);
  });
});
