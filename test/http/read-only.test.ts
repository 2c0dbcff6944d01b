// The HTTP app on a read-only runtime (serve --read-only): every read route and the dashboard serve
// the stored agents; every write route answers 503 read_only, after authentication, changing nothing.
import { afterEach, describe, expect, it } from 'vitest';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createServer } from '../../src/http/app.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { isIdleWithProgress, startRuntime, waitForView } from '../helpers/runtime.js';
import { JSON_HEADERS, readJson } from './harness.js';

const TOKEN = 'read-only-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
});

/** A file with agent `a1` done with one task, served read-only (with a token). */
async function readOnlyApp() {
  const writer = await startRuntime();
  await writer.runtime.spawn('agent', { id: 'a1', input: { tasks: ['t1'] } });
  await waitForView(writer.runtime, 'a1', isIdleWithProgress(1));
  await writer.runtime.close();
  const store = await openSqliteStore(writer.file, { readOnly: true });
  runtime = await createRuntime({ store, machines: [agentDefinition({ llm: createSimulatedLlm() })] });
  return { app: createServer({ runtime, token: TOKEN }), store };
}

describe('a read-only server', () => {
  it('serves every read and the dashboard, and answers every write 503 read_only, changing nothing', async () => {
    const { app, store } = await readOnlyApp();
    const checkpointsBefore = await store.listCheckpoints('a1');

    for (const path of ['/agents', '/agents/a1', '/agents/a1/checkpoints', '/agents/a1/actions', '/machines', '/healthz']) {
      expect((await app.request(path, { headers: AUTH })).status, path).toBe(200);
    }
    // Ready for reads, never for writes: a load balancer sends writes elsewhere.
    const ready = await app.request('/readyz');
    expect(ready.status).toBe(503);
    expect(await readJson(ready)).toEqual({ ok: false, reason: 'read_only' });
    for (const page of ['/', '/ui/agents/a1']) {
      const res = await app.request(page, { headers: AUTH });
      expect(res.status, page).toBe(200);
      expect(res.headers.get('content-type'), page).toMatch(/^text\/html/);
      // The dashboard says it is read-only, and offers nothing that would be refused.
      const html = await res.text();
      expect(html, page).toContain('id="read-only"');
      expect(html, page).toMatch(/<body[^>]* data-read-only/);
      expect(html, page).not.toContain('id="spawn"');
    }

    const writes: [string, string, unknown][] = [
      ['POST', '/agents', { machine: 'agent', id: 'a2' }],
      ['POST', '/agents/a1/events', { type: 'task.add', task: 't2' }],
      ['POST', '/agents/a1/fork', { seq: 1 }],
      ['DELETE', '/agents/a1', undefined],
      // Refused before the body is read: even a malformed one gets the read_only answer.
      ['POST', '/agents/a1/events', '{not json'],
    ];
    for (const [method, path, body] of writes) {
      const res = await app.request(path, {
        method,
        headers: { ...AUTH, ...JSON_HEADERS },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
      expect(res.status, `${method} ${path}`).toBe(503);
      expect(await readJson(res)).toEqual({
        error: { code: 'read_only', message: `Cannot ${method} ${path}: this process opened the store read-only; it serves what is stored and runs nothing. Send writes to the process that runs the agents.` },
      });
    }
    expect((await store.listAgents({ limit: 10 })).items.map((a) => a.id)).toEqual(['a1']);
    expect(await store.listCheckpoints('a1')).toEqual(checkpointsBefore);
    expect(await store.eventsAfter('a1', 0)).toEqual([]);
  });

  it('asks for the token first, and lets the dashboard log in and out (they write nothing to the store)', async () => {
    const { app } = await readOnlyApp();
    expect((await app.request('/agents', { method: 'POST', headers: JSON_HEADERS, body: '{}' })).status).toBe(401);
    const login = await app.request('/ui/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: TOKEN, next: '/' }).toString(),
    });
    expect(login.status).toBe(303);
    expect(login.headers.get('set-cookie')).toContain('durable_agents_token=');
    expect((await app.request('/ui/logout', { method: 'POST', headers: AUTH })).status).toBe(303);
  });
});
