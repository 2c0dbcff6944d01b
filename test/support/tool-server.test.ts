import { afterEach, describe, expect, it, vi } from 'vitest';
import { startToolServer, type ToolCallBody, type ToolDelivery, type ToolServer } from './tool-server.js';

let server: ToolServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const body = (callId: string, args: unknown, name = 'search'): ToolCallBody => ({ agentId: 'a1', seq: 1, callId, name, arguments: args });

// The request the runtime sends for one tool call (the contract's "Tools (function calling)").
function call(url: string, payload: ToolCallBody | string, init: { key?: string; signal?: AbortSignal } = {}): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.key !== undefined) headers['idempotency-key'] = init.key;
  const text = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return fetch(url, { method: 'POST', headers, body: text, ...(init.signal ? { signal: init.signal } : {}) });
}

async function answer(res: Response) {
  return { status: res.status, type: res.headers.get('content-type'), retryAfter: res.headers.get('retry-after'), text: await res.text() };
}

describe('tool server', () => {
  it('echoes the arguments by default and records each delivery with its key and body', async () => {
    server = await startToolServer();
    expect(server.url('search')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/tools\/search$/);
    const res = await call(server.url('search'), body('c1', { q: 'x' }), { key: 'a1:1:c1' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual({ ok: true, echo: { q: 'x' } });
    await call(server.url('lookup'), body('c2', [1, 2], 'lookup'), { key: 'a1:1:c2' });
    await call(server.url('search'), body('c1', { q: 'x' }), { key: 'a1:1:c1' });

    expect(server.deliveries).toHaveLength(3);
    expect(server.deliveries[0]).toEqual({
      at: expect.any(Number),
      name: 'search',
      idempotencyKey: 'a1:1:c1',
      body: body('c1', { q: 'x' }),
      rawBody: JSON.stringify(body('c1', { q: 'x' })),
      outcome: 'answered',
      status: 200,
    });
    expect(server.deliveriesFor('a1:1:c1').map((d) => d.name)).toEqual(['search', 'search']);
    expect([...server.byKey()].map(([key, group]) => [key, group.length])).toEqual([
      ['a1:1:c1', 2],
      ['a1:1:c2', 1],
    ]);
    expect(server.requests).toBe(3);
  });

  it('answers a tool’s queued responses in order, then its standing answer, leaving other tools alone', async () => {
    server = await startToolServer();
    server.enqueue(
      'flaky',
      { kind: 'json', body: { hits: 3 } },
      { kind: 'text', body: 'plain words' },
      { kind: 'status', status: 429, retryAfter: '2' },
      { kind: 'status', status: 503, body: 'upstream down' },
      { kind: 'status', status: 404, body: { error: 'no such page' } },
      { kind: 'json', status: 201, body: null, headers: { 'x-tool': 'yes' } },
    );
    const other = await call(server.url('steady'), body('s', 1, 'steady'));
    expect(await other.json()).toEqual({ ok: true, echo: 1 });

    const seen = [];
    for (let i = 0; i < 7; i++) seen.push(await answer(await call(server.url('flaky'), body(`c${i}`, i, 'flaky'))));
    expect(seen).toEqual([
      { status: 200, type: 'application/json', retryAfter: null, text: '{"hits":3}' },
      { status: 200, type: 'text/plain; charset=utf-8', retryAfter: null, text: 'plain words' },
      { status: 429, type: 'application/json', retryAfter: '2', text: '{"error":"Injected fault: HTTP 429"}' },
      { status: 503, type: 'text/plain; charset=utf-8', retryAfter: null, text: 'upstream down' },
      { status: 404, type: 'application/json', retryAfter: null, text: '{"error":"no such page"}' },
      { status: 201, type: 'application/json', retryAfter: null, text: 'null' },
      { status: 200, type: 'application/json', retryAfter: null, text: '{"ok":true,"echo":6}' },
    ]);
    expect(server.deliveries.map((d) => d.status)).toEqual([200, 200, 200, 429, 503, 404, 201, 200]);
  });

  it('a standing answer may be a response or a handler of the delivery, async or not; undefined restores the echo', async () => {
    server = await startToolServer();
    const handled: ToolDelivery[] = [];
    server.respond('calc', async (delivery) => {
      handled.push(delivery);
      await new Promise((r) => setTimeout(r, 5));
      const args = delivery.body?.arguments as { a: number; b: number };
      return args.b === 0 ? { kind: 'status', status: 400, body: { error: 'division by zero' } } : { kind: 'json', body: { quotient: args.a / args.b } };
    });
    server.respond('down', { kind: 'status', status: 500 });
    server.respond('broken', () => {
      throw new Error('the handler broke');
    });

    expect(await (await call(server.url('calc'), body('c1', { a: 6, b: 3 }, 'calc'), { key: 'k1' })).json()).toEqual({ quotient: 2 });
    expect((await call(server.url('calc'), body('c2', { a: 1, b: 0 }, 'calc'))).status).toBe(400);
    expect(handled.map((d) => d.idempotencyKey)).toEqual(['k1', undefined]);
    // A queued answer still comes first.
    server.enqueue('calc', { kind: 'text', body: 'queued' });
    expect(await (await call(server.url('calc'), body('c3', { a: 1, b: 1 }, 'calc'))).text()).toBe('queued');
    for (let i = 0; i < 2; i++) expect((await call(server.url('down'), body('d', {}, 'down'))).status).toBe(500);
    const broken = await call(server.url('broken'), body('b', {}, 'broken'));
    expect({ status: broken.status, body: (await broken.json()) as unknown }).toEqual({ status: 500, body: { error: 'the handler broke' } });

    server.respond('down', undefined);
    expect(await (await call(server.url('down'), body('d', 'back', 'down'))).json()).toEqual({ ok: true, echo: 'back' });
  });

  it('a delay answers late with its own response or the standing one', async () => {
    server = await startToolServer();
    server.respond('slow', { kind: 'text', body: 'standing' });
    server.enqueue('slow', { kind: 'delay', ms: 120 }, { kind: 'delay', ms: 120, then: { kind: 'status', status: 502 } });
    const t = Date.now();
    expect(await (await call(server.url('slow'), body('c1', {}, 'slow'))).text()).toBe('standing');
    // A lower bound only: the injected 120 ms is the behaviour under test, and load can only add to it.
    expect(Date.now() - t).toBeGreaterThanOrEqual(110);
    expect((await call(server.url('slow'), body('c2', {}, 'slow'))).status).toBe(502);
  });

  it('latencyMs delays every answer, and onDelivery sees each delivery before it is answered', async () => {
    const arrived: string[] = [];
    server = await startToolServer({ latencyMs: 100, onDelivery: (d) => arrived.push(`${d.name}:${d.outcome}`) });
    const t = Date.now();
    await call(server.url('search'), body('c1', {}));
    expect(Date.now() - t).toBeGreaterThanOrEqual(90);
    expect(arrived).toEqual(['search:pending']);
  });

  it('a hang holds the call until the client aborts, and close() drops what is still held', async () => {
    server = await startToolServer();
    server.enqueue('stuck', { kind: 'hang' }, { kind: 'hang' });
    const aborted = await call(server.url('stuck'), body('c1', {}, 'stuck'), { signal: AbortSignal.timeout(150) }).catch((err: unknown) => err);
    expect(aborted).toMatchObject({ name: 'TimeoutError' });
    await vi.waitFor(() => expect(server?.deliveries[0]?.outcome).toBe('aborted'));

    let settled = false;
    const held = call(server.url('stuck'), body('c2', {}, 'stuck'))
      .catch((err: unknown) => err)
      .finally(() => (settled = true));
    await vi.waitFor(() => expect(server?.deliveries).toHaveLength(2));
    expect(settled).toBe(false); // close() below finds it held
    await server.close();
    expect(await held).toBeInstanceOf(TypeError); // fetch's "fetch failed": no late answer
    expect(server.deliveries.map((d) => [d.outcome, d.status])).toEqual([
      ['aborted', undefined],
      ['aborted', undefined],
    ]);
  });

  it('names the keys delivered with another name or arguments, whatever the order of their keys', async () => {
    server = await startToolServer();
    await call(server.url('search'), body('c1', { q: 'x', page: 1 }), { key: 'same' });
    // The same arguments restored from a Postgres jsonb column come back in another key order.
    await call(server.url('search'), body('c1', { page: 1, q: 'x' }), { key: 'same' });
    await call(server.url('search'), body('c2', { q: 'x' }), { key: 'other-args' });
    await call(server.url('search'), body('c2', { q: 'y' }), { key: 'other-args' });
    await call(server.url('lookup'), body('c3', {}, 'lookup'), { key: 'other-tool' });
    await call(server.url('search'), body('c3', {}, 'lookup'), { key: 'other-tool' });
    await call(server.url('search'), body('c4', {}));
    expect(server.conflictingKeys()).toEqual(['other-args', 'other-tool']);
    expect([...server.byKey().values()].map((g) => g.length)).toEqual([2, 2, 2]);
  });

  it('refuses a body that is not a JSON object with 400 and answers unknown routes 404, recording only tool calls', async () => {
    server = await startToolServer();
    server.enqueue('search', { kind: 'text', body: 'kept for the next good call' });
    const bad = await call(server.url('search'), 'not json', { key: 'k' });
    expect(bad.status).toBe(400);
    expect((await call(server.url('search'), '[1,2]')).status).toBe(400);
    expect(server.deliveries.map((d) => [d.body, d.rawBody, d.status])).toEqual([
      [undefined, 'not json', 400],
      [undefined, '[1,2]', 400],
    ]);
    expect(await (await call(server.url('search'), body('c1', {}))).text()).toBe('kept for the next good call');

    const base = server.url('x').replace(/\/tools\/x$/, '');
    expect((await fetch(`${base}/tools/search`)).status).toBe(404);
    expect((await fetch(`${base}/elsewhere`, { method: 'POST', body: '{}' })).status).toBe(404);
    expect((await fetch(`${base}/tools/a/b`, { method: 'POST', body: '{}' })).status).toBe(404);
    expect(server.deliveries).toHaveLength(3);
    expect(server.requests).toBe(6);
  });
});
