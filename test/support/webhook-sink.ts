// A local receiver for the agent's side-effect webhooks, so tests can assert exactly-once
// effects (by Idempotency-Key) and inject delivery failures.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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
  byKey(): Map<string, Delivery[]>;
  enqueueStatuses(...statuses: number[]): void;
  setLatency(ms: number): void;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    // Left undefined (rawBody keeps the bytes) so a test can tell "not JSON" from any JSON value.
    return undefined;
  }
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

  const reply = (res: ServerResponse, status: number) => {
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(status >= 200 && status < 300 ? { ok: true } : { error: 'injected' }));
  };

  const server = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'POST only' }));
      return;
    }
    readBody(req).then(
      (rawBody) => {
        const key = req.headers['idempotency-key'];
        // Status is decided on arrival so queued failures line up with delivery order, whatever the latency.
        const status = statuses.shift() ?? 200;
        const delivery = { at: Date.now(), idempotencyKey: Array.isArray(key) ? key[0] : key, body: parseJson(rawBody), rawBody, status };
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
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;

  return {
    url: `http://127.0.0.1:${port}/hook`,
    deliveries,
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
    // Idempotent: tests often close explicitly and again in afterEach.
    close: () =>
      (closing ??= new Promise<void>((resolve, reject) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.close((err) => (err ? reject(err) : resolve()));
        // Keep-alive sockets from fetch would otherwise hold close() open.
        server.closeAllConnections();
      })),
  };
}
