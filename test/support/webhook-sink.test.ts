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
    // A lower bound only: the injected 150 ms is the behaviour under test, and load can only add to it.
    expect(Date.now() - t).toBeGreaterThanOrEqual(140);

    // A reply held back for longer than the test may run: close() resolving at all shows it did not
    // wait for it, and the client gets no answer (fetch fails) rather than a late 200.
    sink.setLatency(10 * 60_000);
    let settled = false;
    const pending = post(sink.url, '{}')
      .catch((err: unknown) => err)
      .finally(() => (settled = true));
    while (sink.deliveries.length < 2) await new Promise((r) => setTimeout(r, 5));
    expect(settled).toBe(false); // close() below finds the reply pending
    await sink.close();
    expect(await pending).toBeInstanceOf(TypeError);
  });
});
