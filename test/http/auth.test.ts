import { afterEach, describe, expect, it } from 'vitest';
import { JSON_HEADERS, readJson, storeContents, testApp, type TestApp } from './harness.js';

const TOKEN = 's3cret-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };

let t: TestApp;
afterEach(async () => {
  await t?.close();
});

describe('bearer token (--token)', () => {
  it('leaves /healthz open', async () => {
    t = await testApp({ token: TOKEN });
    const res = await t.app.request('/healthz');
    expect(res.status).toBe(200);
    expect(await readJson(res)).toEqual({ ok: true });
  });

  it.each([
    ['no header', {}],
    ['a wrong token', { authorization: 'Bearer nope' }],
    ['a token that is a prefix', { authorization: `Bearer ${TOKEN.slice(0, -1)}` }],
    ['a token with extra characters', { authorization: `Bearer ${TOKEN}x` }],
    ['another scheme', { authorization: `Basic ${Buffer.from(`user:${TOKEN}`).toString('base64')}` }],
    ['the bare token', { authorization: TOKEN }],
    ['an empty bearer', { authorization: 'Bearer ' }],
  ])('answers 401 unauthorized for %s, on every other route', async (_name, headers: Record<string, string>) => {
    t = await testApp({ token: TOKEN });
    const before = await storeContents(t.store);
    for (const [method, url] of [
      ['GET', '/machines'],
      ['GET', '/machines/agent'],
      ['GET', '/agents'],
      ['POST', '/agents'],
      ['GET', '/agents/a1'],
      ['DELETE', '/agents/a1'],
      ['POST', '/agents/a1/events'],
      ['GET', '/agents/a1/checkpoints'],
      ['GET', '/agents/a1/checkpoints/1'],
      ['POST', '/agents/a1/fork'],
      ['GET', '/agents/a1/actions'],
      ['GET', '/agents/a1/stream'],
      ['GET', '/metrics'],
      ['GET', '/openapi.json'],
      ['GET', '/no-such-route'],
    ] as const) {
      const body = method === 'POST' ? JSON.stringify({ machine: 'agent', id: 'a1', type: 'finish', checkpoint: 1 }) : undefined;
      const res = await t.app.request(url, { method, headers: { ...JSON_HEADERS, ...headers }, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${url}`).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect((await readJson(res)).error.code).toBe('unauthorized');
    }
    expect(await storeContents(t.store)).toEqual(before);
  });

  it('lets requests with the right token through', async () => {
    t = await testApp({ token: TOKEN });
    const spawn = await t.app.request('/agents', {
      method: 'POST',
      headers: { ...JSON_HEADERS, ...AUTH },
      body: JSON.stringify({ machine: 'agent', id: 'a1' }),
    });
    expect(spawn.status).toBe(201);
    expect((await t.app.request('/agents/a1', { headers: AUTH })).status).toBe(200);
    expect((await t.app.request('/agents/a1', { headers: { authorization: `bearer  ${TOKEN}` } })).status).toBe(200);
    expect((await t.app.request('/metrics', { headers: AUTH })).status).toBe(200);
  });

  it('asks for nothing when no token is configured', async () => {
    t = await testApp();
    expect((await t.app.request('/machines')).status).toBe(200);
  });
});
