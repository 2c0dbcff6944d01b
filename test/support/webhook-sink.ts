// A local receiver for the agent's side-effect webhooks, so tests can assert exactly-once
// effects (by Idempotency-Key) and inject delivery failures.
import type { ServerResponse } from 'node:http';
import { readJsonBody, sendJson, startHttpFake } from './http-fake.js';

export interface Delivery {
  at: number;
  idempotencyKey: string | undefined;
  body: unknown;
  rawBody: string;
  status: number;
}

export interface WebhookSink {
  url: string;
  deliveries: Delivery[];
  /** Every HTTP request received, refused methods included (`deliveries` holds the POSTs). */
  readonly requests: number;
  byKey(): Map<string, Delivery[]>;
  enqueueStatuses(...statuses: number[]): void;
  setLatency(ms: number): void;
  close(): Promise<void>;
}

export interface WebhookSinkOptions {
  /** Called as each delivery arrives, before it is answered: the moment to check what was committed first. */
  onDelivery?: (delivery: Delivery) => void;
}

export async function startWebhookSink(options: WebhookSinkOptions = {}): Promise<WebhookSink> {
  const deliveries: Delivery[] = [];
  const statuses: number[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let latencyMs = 0;

  const reply = (res: ServerResponse, status: number) =>
    sendJson(res, status, status >= 200 && status < 300 ? { ok: true } : { error: 'injected' });

  const server = await startHttpFake(
    (req, res) => {
      if (req.method !== 'POST') return sendJson(res, 405, { error: 'POST only' });
      readJsonBody(req).then(
        ({ raw: rawBody, json }) => {
          const key = req.headers['idempotency-key'];
          // Status is decided on arrival so queued failures line up with delivery order, whatever the latency.
          const status = statuses.shift() ?? 200;
          // A body that is not JSON is left undefined (rawBody keeps the bytes): "not JSON" differs from any JSON value.
          const delivery = { at: Date.now(), idempotencyKey: Array.isArray(key) ? key[0] : key, body: json, rawBody, status };
          deliveries.push(delivery);
          options.onDelivery?.(delivery);
          if (latencyMs <= 0) return reply(res, status);
          const t = setTimeout(() => {
            timers.delete(t);
            reply(res, status);
          }, latencyMs);
          timers.add(t);
        },
        () => res.destroy(),
      );
    },
    {
      onClose: () => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
      },
    },
  );

  return {
    url: `${server.url}/hook`,
    deliveries,
    get requests() {
      return server.requests;
    },
    byKey: () => {
      const groups = new Map<string, Delivery[]>();
      for (const d of deliveries) {
        if (d.idempotencyKey === undefined) continue;
        groups.set(d.idempotencyKey, [...(groups.get(d.idempotencyKey) ?? []), d]);
      }
      return groups;
    },
    enqueueStatuses: (...s) => void statuses.push(...s),
    setLatency: (ms) => void (latencyMs = ms),
    close: server.close,
  };
}
