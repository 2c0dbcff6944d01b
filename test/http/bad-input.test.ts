// Contract guarantee 4: bad input gets a clear 4xx and changes nothing. Each row is sent to a
// server holding two settled agents; the store must be exactly as it was afterwards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isIdleWith, JSON_HEADERS, readJson, spawn, storeContents, testApp, waitForView, type TestApp } from './harness.js';

interface Row {
  name: string;
  method?: string;
  url: string;
  headers?: Record<string, string>;
  /** A string or bytes is sent as is; anything else as JSON. */
  body?: unknown;
  status: number;
  code: string;
}

const deep = (levels: number, leaf = '1') => '['.repeat(levels) + leaf + ']'.repeat(levels);
const json = (value: unknown) => JSON.stringify(value);
const tenKb = 'a'.repeat(10_000);
const overOneMiB = json({ machine: 'agent', input: { system: 'x'.repeat(1024 * 1024) } });

const ROWS: Row[] = [
  // Malformed JSON and wrong shapes
  { name: 'truncated JSON', url: '/agents', body: '{"machine":', status: 400, code: 'malformed_json' },
  { name: 'trailing garbage', url: '/agents', body: '{"machine":"agent"} x', status: 400, code: 'malformed_json' },
  { name: 'single quotes', url: '/agents', body: "{'machine':'agent'}", status: 400, code: 'malformed_json' },
  { name: 'an empty body', url: '/agents', body: '', status: 400, code: 'malformed_json' },
  { name: 'bytes that are not UTF-8', url: '/agents', body: new Uint8Array([0xff, 0xfe, 0x00, 0x7b]), status: 400, code: 'malformed_json' },
  { name: 'a JSON array', url: '/agents', body: '[]', status: 400, code: 'invalid_input' },
  { name: 'JSON null', url: '/agents', body: 'null', status: 400, code: 'invalid_input' },
  { name: 'a number for machine', url: '/agents', body: { machine: 42 }, status: 400, code: 'invalid_input' },
  { name: 'no machine', url: '/agents', body: { id: 'x1' }, status: 400, code: 'invalid_input' },
  { name: 'input that is a string', url: '/agents', body: { machine: 'agent', input: 'go' }, status: 400, code: 'invalid_input' },
  { name: 'input that is an array', url: '/agents', body: { machine: 'agent', input: ['go'] }, status: 400, code: 'invalid_input' },
  { name: 'tasks that are not strings', url: '/agents', body: { machine: 'agent', input: { tasks: [1, 2] } }, status: 400, code: 'invalid_input' },
  { name: 'an unknown top-level field', url: '/agents', body: { machine: 'agent', inputs: {} }, status: 400, code: 'invalid_input' },
  { name: 'a __proto__ key in input', url: '/agents', body: '{"machine":"agent","input":{"__proto__":{"polluted":true}}}', status: 400, code: 'invalid_input' },
  { name: 'a webhook that is not a URL', url: '/agents', body: { machine: 'agent', input: { webhook: 'javascript:alert(1)' } }, status: 400, code: 'invalid_input' },
  { name: 'an event without type', url: '/agents/ok-1/events', body: { task: 'x' }, status: 400, code: 'invalid_input' },
  { name: 'an event type that is a number', url: '/agents/ok-1/events', body: { type: 1 }, status: 400, code: 'invalid_input' },
  { name: 'a fork checkpoint that is a string', url: '/agents/ok-1/fork', body: { checkpoint: '1' }, status: 400, code: 'invalid_input' },
  // Size
  { name: 'a body over 1 MiB', url: '/agents', body: overOneMiB, status: 413, code: 'payload_too_large' },
  { name: 'an event over 1 MiB', url: '/agents/ok-1/events', body: json({ type: 'task.add', task: 'x'.repeat(1_100_000) }), status: 413, code: 'payload_too_large' },
  // Absurd ids
  { name: 'a 10 kB id in the body', url: '/agents', body: { machine: 'agent', id: tenKb }, status: 400, code: 'invalid_id' },
  { name: 'a 10 kB id in the path', method: 'GET', url: `/agents/${tenKb}`, status: 400, code: 'invalid_id' },
  { name: 'a 10 kB id when sending an event', url: `/agents/${tenKb}/events`, body: { type: 'finish' }, status: 400, code: 'invalid_id' },
  { name: 'an empty id', url: '/agents', body: { machine: 'agent', id: '' }, status: 400, code: 'invalid_id' },
  { name: 'a number as id', url: '/agents', body: { machine: 'agent', id: 12 }, status: 400, code: 'invalid_id' },
  { name: 'a NUL byte in the body id', url: '/agents', body: { machine: 'agent', id: 'a\u0000b' }, status: 400, code: 'invalid_id' },
  { name: 'a NUL byte in the path id', method: 'GET', url: '/agents/a%00b', status: 400, code: 'invalid_id' },
  { name: 'a NUL byte in a fork id', url: '/agents/ok-1/fork', body: { checkpoint: 1, id: 'x\u0000' }, status: 400, code: 'invalid_id' },
  { name: '../ in the body id', url: '/agents', body: { machine: 'agent', id: '../../etc/passwd' }, status: 400, code: 'invalid_id' },
  { name: 'encoded ../ in the path', method: 'GET', url: '/agents/..%2F..%2Fetc%2Fpasswd', status: 400, code: 'invalid_id' },
  { name: 'encoded ../ when sending an event', url: '/agents/..%2Fok-1/events', body: { type: 'finish' }, status: 400, code: 'invalid_id' },
  { name: 'a backslash path in the id', url: '/agents', body: { machine: 'agent', id: '..\\..\\windows' }, status: 400, code: 'invalid_id' },
  { name: 'a path that climbs out of /agents', method: 'GET', url: '/agents/ok-1/../../etc/passwd', status: 404, code: 'not_found' },
  { name: 'SQL in the body id', url: '/agents', body: { machine: 'agent', id: "x'; DROP TABLE agents; --" }, status: 400, code: 'invalid_id' },
  { name: 'SQL in the path id', method: 'GET', url: `/agents/${encodeURIComponent("' OR '1'='1")}`, status: 400, code: 'invalid_id' },
  { name: 'SQL in the path id of a delete', method: 'DELETE', url: `/agents/${encodeURIComponent('ok-1; DELETE FROM agents')}`, status: 400, code: 'invalid_id' },
  { name: 'SQL as the machine name', url: '/agents', body: { machine: "agent' OR 1=1 --", id: 'sql-1' }, status: 404, code: 'not_found' },
  { name: 'SQL in the status filter', method: 'GET', url: `/agents?status=${encodeURIComponent("active' OR 1=1 --")}`, status: 400, code: 'invalid_input' },
  { name: 'unicode look-alikes in the id', url: '/agents', body: { machine: 'agent', id: 'аgent' }, status: 400, code: 'invalid_id' },
  // Deep nesting
  { name: 'a body nested 10k levels', url: '/agents', body: deep(10_000), status: 400, code: 'invalid_input' },
  { name: 'input nested 10k levels', url: '/agents', body: `{"machine":"agent","input":{"x":${deep(10_000)}}}`, status: 400, code: 'invalid_input' },
  { name: 'an event nested 10k levels', url: '/agents/ok-1/events', body: `{"type":"task.add","task":${deep(10_000, '"x"')}}`, status: 400, code: 'invalid_input' },
  { name: 'objects nested 10k levels', url: '/agents/ok-1/events', body: '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000), status: 400, code: 'invalid_input' },
  { name: 'unbalanced deep nesting', url: '/agents', body: '['.repeat(200_000), status: 400, code: 'invalid_input' },
  // Content type
  { name: 'text/plain', url: '/agents', headers: { 'content-type': 'text/plain' }, body: { machine: 'agent' }, status: 415, code: 'unsupported_media_type' },
  { name: 'no content type', url: '/agents', headers: { 'content-type': '' }, body: { machine: 'agent' }, status: 415, code: 'unsupported_media_type' },
  { name: 'a form', url: '/agents', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'machine=agent', status: 415, code: 'unsupported_media_type' },
  { name: 'application/jsonp', url: '/agents/ok-1/events', headers: { 'content-type': 'application/jsonp' }, body: { type: 'finish' }, status: 415, code: 'unsupported_media_type' },
  { name: 'multipart on fork', url: '/agents/ok-1/fork', headers: { 'content-type': 'multipart/form-data; boundary=x' }, body: '--x--', status: 415, code: 'unsupported_media_type' },
  // Query and path parameters
  { name: 'limit=0', method: 'GET', url: '/agents?limit=0', status: 400, code: 'invalid_input' },
  { name: 'limit=1001', method: 'GET', url: '/agents?limit=1001', status: 400, code: 'invalid_input' },
  { name: 'limit=ten', method: 'GET', url: '/agents?limit=ten', status: 400, code: 'invalid_input' },
  { name: 'status=zombie', method: 'GET', url: '/agents?status=zombie', status: 400, code: 'invalid_input' },
  { name: 'a forged cursor', method: 'GET', url: `/agents?cursor=${Buffer.from('p:abc').toString('base64url')}`, status: 400, code: 'invalid_input' },
  { name: 'a seq that is not a number', method: 'GET', url: '/agents/ok-1/checkpoints/one', status: 400, code: 'invalid_input' },
  { name: 'a 300-character Idempotency-Key', url: '/agents/ok-1/events', headers: { 'idempotency-key': 'k'.repeat(300) }, body: { type: 'finish' }, status: 400, code: 'invalid_input' },
  // Events the machine does not accept
  { name: 'an unknown event type', url: '/agents/ok-1/events', body: { type: 'explode' }, status: 422, code: 'invalid_event' },
  { name: 'an xstate.* event', url: '/agents/ok-1/events', body: { type: 'xstate.done.actor.llm', output: 'forged' }, status: 422, code: 'invalid_event' },
  { name: 'a runtime.* event', url: '/agents/ok-1/events', body: { type: 'runtime.committed' }, status: 422, code: 'invalid_event' },
  { name: 'a known event with extra fields', url: '/agents/ok-1/events', body: { type: 'task.add', task: 'x', priority: 1 }, status: 422, code: 'invalid_event' },
  // Conflicts and missing things
  { name: 'an event to a stopped agent', url: '/agents/stopped-1/events', body: { type: 'task.add', task: 'x' }, status: 409, code: 'conflict' },
  { name: 'an id taken by another machine', url: '/agents', body: { machine: 'toggle', id: 'ok-1' }, status: 409, code: 'conflict' },
  { name: 'a fork onto an existing id', url: '/agents/ok-1/fork', body: { checkpoint: 1, id: 'stopped-1' }, status: 409, code: 'conflict' },
  { name: 'an event to an unknown agent', url: '/agents/ghost/events', body: { type: 'finish' }, status: 404, code: 'not_found' },
  { name: 'a fork of a missing checkpoint', url: '/agents/ok-1/fork', body: { checkpoint: 10_000 }, status: 404, code: 'not_found' },
];

describe('bad input', () => {
  let t: TestApp;
  let before: Awaited<ReturnType<typeof storeContents>>;

  beforeAll(async () => {
    t = await testApp();
    await spawn(t.app, 'ok-1', { tasks: ['settle first'] });
    await waitForView(t.app, 'ok-1', isIdleWith(1));
    await spawn(t.app, 'stopped-1');
    await t.app.request('/agents/stopped-1', { method: 'DELETE' });
    before = await storeContents(t.store);
  });

  afterAll(async () => {
    await t?.close();
  });

  it.each(ROWS.map((row) => [row.name, row] as const))('answers %s with a 4xx and changes nothing', async (_name, row) => {
    const method = row.method ?? 'POST';
    const headers: Record<string, string> = method === 'POST' ? { ...JSON_HEADERS, ...row.headers } : { ...row.headers };
    if (headers['content-type'] === '') delete headers['content-type'];
    const body = row.body === undefined ? undefined : typeof row.body === 'string' || row.body instanceof Uint8Array ? row.body : JSON.stringify(row.body);
    const res = await t.app.request(row.url, { method, headers, ...(body === undefined ? {} : { body: body as RequestInit["body"] }) });

    expect(res.status).toBe(row.status);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const payload = (await readJson(res)) as { error: { code: string; message: string } };
    expect(Object.keys(payload)).toEqual(['error']);
    expect(Object.keys(payload.error).sort()).toEqual(['code', 'message']);
    expect(payload.error.code).toBe(row.code);
    expect(payload.error.message).toMatch(/^\S.*[.)]$/s);
    expect(payload.error.message.length).toBeLessThan(1_000);

    expect(await storeContents(t.store)).toEqual(before);
    expect((await t.app.request('/healthz')).status).toBe(200);
  });

  it('leaves a working server behind: the settled agent still takes events', async () => {
    const res = await t.app.request('/agents/ok-1/events', {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ type: 'task.add', task: 'after the storm' }),
    });
    expect(res.status).toBe(202);
    await waitForView(t.app, 'ok-1', isIdleWith(2));
  });
});
