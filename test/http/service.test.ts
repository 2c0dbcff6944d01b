import { Validator } from '@seriousme/openapi-schema-validator';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { agentMachine } from '../../src/agents/reference/machine.js';
import { getJson, isIdleWith, postJson, readJson, spawn, testApp, waitForView, type TestApp } from './harness.js';

let t: TestApp;
afterEach(async () => {
  vi.restoreAllMocks();
  await t?.close();
});

describe('GET /healthz', () => {
  it('answers 200 {"ok":true}', async () => {
    t = await testApp();
    expect(await getJson(t.app, '/healthz')).toEqual({ status: 200, body: { ok: true } });
  });
});

describe('GET /machines', () => {
  it('lists each machine with its top-level states and the events a caller may send', async () => {
    t = await testApp();
    const { status, body } = await getJson(t.app, '/machines');
    expect(status).toBe(200);
    const agent = body.items.find((m: { name: string }) => m.name === 'agent');
    expect(agent).toEqual({
      name: 'agent',
      version: '3',
      states: ['idle', 'callingLLM', 'persisted', 'sideEffect', 'failed', 'done'],
      events: ['budget.raise', 'finish', 'retry', 'task.add', 'task.skip', 'tool.approve', 'tool.reject'],
    });
    expect(body.items.map((m: { name: string }) => m.name).sort()).toEqual(['agent', 'toggle']);
  });

  it('returns a machine definition as machine.toJSON() gives it', async () => {
    t = await testApp();
    const { status, body } = await getJson(t.app, '/machines/agent');
    expect(status).toBe(200);
    expect(body.name).toBe('agent');
    expect(body.version).toBe('3');
    expect(body.definition).toEqual(JSON.parse(JSON.stringify(agentMachine.toJSON())));
    expect(Object.keys(body.definition.states)).toEqual(['idle', 'callingLLM', 'persisted', 'sideEffect', 'failed', 'done']);
  });

  it('answers 404 not_found for a machine that is not registered', async () => {
    t = await testApp();
    const { status, body } = await getJson(t.app, '/machines/nope');
    expect(status).toBe(404);
    expect(body.error).toEqual({ code: 'not_found', message: 'No machine with id "nope".' });
  });
});

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3 document with every route of the contract', async () => {
    t = await testApp();
    const { status, body } = await getJson(t.app, '/openapi.json');
    expect(status).toBe(200);
    expect(body.openapi).toMatch(/^3\./);
    const result = await new Validator().validate(body);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    const routes = Object.entries(body.paths as Record<string, object>).flatMap(([p, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`),
    );
    expect(routes.sort()).toEqual(
      [
        'GET /healthz',
        'GET /readyz',
        'GET /machines',
        'GET /machines/{name}',
        'GET /machines/{name}/stately',
        'POST /agents',
        'GET /agents',
        'GET /agents/{id}',
        'DELETE /agents/{id}',
        'POST /agents/{id}/events',
        'GET /agents/{id}/checkpoints',
        'GET /agents/{id}/checkpoints/{seq}',
        'POST /agents/{id}/fork',
        'GET /agents/{id}/actions',
        'GET /agents/{id}/stream',
        'GET /metrics',
        'GET /openapi.json',
      ].sort(),
    );
    // The schemas are the validators: the id rule and the page size bounds show up in the document.
    expect(body.paths['/agents/{id}'].get.parameters[0].schema.pattern).toBe('^[A-Za-z0-9._:-]{1,128}$');
    const limit = body.paths['/agents'].get.parameters.find((p: { name: string }) => p.name === 'limit');
    expect(limit.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000 });
    expect(body.paths['/healthz'].get.security).toEqual([]);
    expect(body.paths['/readyz'].get.security).toEqual([]);
    // Checked by declared-headers.ts rather than zod-openapi's validator, still documented.
    const key = body.paths['/agents/{id}/events'].post.parameters.find((p: { name: string }) => p.name === 'Idempotency-Key');
    expect(key).toMatchObject({ in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 255 } });
  });
});

describe('GET /metrics', () => {
  it('serves Prometheus text with process metrics, request counts by route and agents by status', async () => {
    t = await testApp();
    await spawn(t.app, 'm1', { tasks: ['one'] });
    await waitForView(t.app, 'm1', isIdleWith(1));
    await t.app.request('/agents/nope');
    const res = await t.app.request('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain('durable_agents_process_cpu_user_seconds_total');
    expect(text).toMatch(/durable_agents_http_requests_total\{method="POST",route="\/agents",status="201"\} 1/);
    expect(text).toMatch(/durable_agents_http_requests_total\{method="GET",route="\/agents\/:id",status="404"\} 1/);
    expect(text).toMatch(/durable_agents_agents\{status="active"\} 1/);
    expect(text).toMatch(/durable_agents_agents\{status="done"\} 0/);
    expect(text).toMatch(/durable_agents_agents_spawned_total\{machine="agent"\} 1/);
    expect(text).toMatch(/durable_agents_live_agents 1/);
    expect(text).toMatch(/durable_agents_inbox_depth 0/);
    // This runtime was given no metrics observer: no transition or LLM counters that would never move.
    expect(text).not.toContain('durable_agents_transitions_total');
    expect(text).not.toContain('durable_agents_llm_calls_total');
  });
});

describe('unknown routes and unexpected errors', () => {
  it('answers 404 not_found in the error shape for a route that does not exist', async () => {
    t = await testApp();
    for (const [method, url] of [
      ['GET', '/nope'],
      ['POST', '/agents/a1/nope'],
      ['PUT', '/agents/a1'],
    ] as const) {
      const res = await t.app.request(url, { method });
      expect(res.status).toBe(404);
      expect(await readJson(res)).toEqual({ error: { code: 'not_found', message: `There is no route ${method} ${url}.` } });
    }
  });

  it('answers 500 internal without details and logs the stack when something unexpected throws', async () => {
    t = await testApp();
    await spawn(t.app, 'boom');
    vi.spyOn(t.runtime, 'view').mockRejectedValueOnce(new Error('kaboom: secret detail'));
    const res = await t.app.request('/agents/boom');
    expect(res.status).toBe(500);
    const body = await readJson(res);
    expect(body.error.code).toBe('internal');
    expect(body.error.message).not.toContain('kaboom');
    const line = t.logs.find((l) => l.msg === 'unhandled error while serving a request');
    expect(line).toMatchObject({ level: 50, agentId: 'boom', err: { message: 'kaboom: secret detail' } });
    expect((line?.err as { stack: string }).stack).toContain('kaboom');
    expect(typeof line?.reqId).toBe('string');
    // The server keeps serving.
    expect((await t.app.request('/agents/boom')).status).toBe(200);
  });
});

describe('request logging', () => {
  it('writes lines that carry the request id, and the agent id and seq on lines about an agent', async () => {
    t = await testApp();
    const res = await postJson(t.app, '/agents', { machine: 'agent', id: 'log1' }, { 'x-request-id': 'req-abc' });
    expect(res.headers.get('x-request-id')).toBe('req-abc');
    await postJson(t.app, '/agents/log1/events', { type: 'task.add', task: 'x' }, { 'x-request-id': 'req-def' });
    expect(t.logs.find((l) => l.msg === 'agent spawned')).toMatchObject({ reqId: 'req-abc', agentId: 'log1', machine: 'agent', created: true });
    expect(t.logs.find((l) => l.msg === 'event committed')).toMatchObject({ reqId: 'req-def', agentId: 'log1', seq: 1, type: 'task.add' });
    expect(t.logs.find((l) => l.msg === 'request' && l.reqId === 'req-def')).toMatchObject({
      agentId: 'log1',
      method: 'POST',
      route: '/agents/:id/events',
      status: 202,
    });
  });
});
