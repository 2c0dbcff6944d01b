import { afterEach, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from './webhook-sink.js';

let sink: WebhookSink | undefined;
afterEach(async () => {
  await sink?.close();
  sink = undefined;
});

function post(url: string, body: string, key?: string): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== undefined) headers['idempotency-key'] = key;
  return fetch(url, { method: 'POST', headers, body });
}

describe('webhook sink', () => {
  it('records deliveries with their Idempotency-Key and parsed body', async () => {
    sink = await startWebhookSink();
    const res = await post(sink.url, JSON.stringify({ effect: 'email', to: 'a@b.c' }), 'k1');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
    await post(`${sink.url}/other/path`, '{"n":2}', 'k1');
    await post(sink.url, 'not json');

    expect(sink.deliveries).toHaveLength(3);
    expect(sink.deliveries[0]).toMatchObject({ idempotencyKey: 'k1', body: { effect: 'email', to: 'a@b.c' }, status: 200 });
    expect(sink.deliveries[2]).toMatchObject({ idempotencyKey: undefined, body: undefined, rawBody: 'not json' });
    // Unkeyed deliveries are left out of the grouping: they cannot be deduplicated anyway.
    const groups = sink.byKey();
    expect([...groups.keys()]).toEqual(['k1']);
    expect(groups.get('k1')?.map((d) => d.body)).toEqual([{ effect: 'email', to: 'a@b.c' }, { n: 2 }]);
  });

  it('answers queued statuses in order, then 200', async () => {
    sink = await startWebhookSink();
    sink.enqueueStatuses(500, 503, 400);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await post(sink.url, '{}', 'same');
      statuses.push(res.status);
      expect(await res.json()).toEqual(res.ok ? { ok: true } : { error: 'injected' });
    }
    expect(statuses).toEqual([500, 503, 400, 200]);
    expect(sink.deliveries.map((d) => d.status)).toEqual([500, 503, 400, 200]);
    expect(sink.byKey().get('same')).toHaveLength(4);
  });

  it('applies latency and still closes promptly with a pending reply', async () => {
    sink = await startWebhookSink();
    sink.setLatency(150);
    const t = Date.now();
    await post(sink.url, '{}');
    expect(Date.now() - t).toBeGreaterThanOrEqual(140);

    sink.setLatency(10_000);
    const pending = post(sink.url, '{}').catch((err: unknown) => err);
    while (sink.deliveries.length < 2) await new Promise((r) => setTimeout(r, 5));
    const started = Date.now();
    await sink.close();
    expect(Date.now() - started).toBeLessThan(500);
    expect(await pending).toBeInstanceOf(TypeError);
  });
});
