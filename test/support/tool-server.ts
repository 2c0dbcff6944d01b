// A local server of HTTP tools for tests: each tool is `POST /tools/<name>`, every delivery is
// recorded with its Idempotency-Key, and each tool's answers can be scripted (JSON, text, error
// statuses, delays, hangs, handlers) so tests can drive a tool-calling agent through every outcome
// and assert "one name and arguments per key".
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readJsonBody, sendJson, startHttpFake } from './http-fake.js';

/** The body the runtime sends to a tool (the contract's "Tools (function calling)"). */
export interface ToolCallBody {
  agentId: string;
  seq: number;
  callId: string;
  name: string;
  arguments: unknown;
}

export interface ToolDelivery {
  at: number;
  /** The tool named by the route. */
  name: string;
  idempotencyKey: string | undefined;
  /** The parsed JSON body, undefined when it is not a JSON object (`rawBody` keeps the bytes). */
  body: ToolCallBody | undefined;
  rawBody: string;
  /** Pending until an answer is sent; aborted when the client hung up (or close() cut it off) first. */
  outcome: 'pending' | 'answered' | 'aborted';
  /** The status sent, once sent. */
  status?: number;
}

/**
 * One answer of a tool. `json` and `text` succeed with 200 unless given a status; `status` sends
 * that status with a JSON (or, for a string, text) body, and Retry-After when given; `delay`
 * answers after `ms` with `then`, or with what the tool would answer otherwise; `hang` never
 * answers, until the client aborts or the server closes.
 */
export type ToolResponse =
  | { kind: 'json'; body: unknown; status?: number; headers?: Record<string, string> }
  | { kind: 'text'; body: string; status?: number; headers?: Record<string, string> }
  | { kind: 'status'; status: number; body?: unknown; retryAfter?: string }
  | { kind: 'delay'; ms: number; then?: ToolResponse }
  | { kind: 'hang' };

/** Decides a tool's answer from its delivery; undefined leaves it to the default echo. */
export type ToolHandler = (delivery: ToolDelivery) => ToolResponse | undefined | Promise<ToolResponse | undefined>;

export interface ToolServer {
  /** `http://127.0.0.1:<port>/tools/<name>`. */
  url(name: string): string;
  deliveries: ToolDelivery[];
  /** Every HTTP request received, unknown routes included (`deliveries` holds the tool calls). */
  readonly requests: number;
  deliveriesFor(idempotencyKey: string): ToolDelivery[];
  /** Deliveries grouped by Idempotency-Key, in arrival order; unkeyed ones are left out. */
  byKey(): Map<string, ToolDelivery[]>;
  /** Keys delivered with more than one name or arguments (arguments compared as JSON, key order aside). */
  conflictingKeys(): string[];
  /** The standing answer of a tool, after its queued ones: a response, or a handler of each delivery. */
  respond(name: string, handler: ToolHandler | ToolResponse | undefined): void;
  /** One-shot answers of a tool, used in order before its standing answer. */
  enqueue(name: string, ...responses: ToolResponse[]): void;
  close(): Promise<void>;
}

export interface ToolServerOptions {
  /** Added before every answer. Default 0. */
  latencyMs?: number;
  /** Called as each delivery arrives, before it is answered: the moment to check what was committed first. */
  onDelivery?: (delivery: ToolDelivery) => void;
}

const ROUTE = /^\/tools\/([^/]+)$/;

/** The default answer: `200 {"ok":true,"echo":<arguments>}`. */
export function echo(delivery: ToolDelivery): ToolResponse {
  return { kind: 'json', body: { ok: true, echo: delivery.body?.arguments ?? null } };
}

export async function startToolServer(options: ToolServerOptions = {}): Promise<ToolServer> {
  const deliveries: ToolDelivery[] = [];
  const queues = new Map<string, ToolResponse[]>();
  const standing = new Map<string, ToolHandler>();
  const timers = new Set<NodeJS.Timeout>();
  const open = new Set<{ res: ServerResponse; delivery: ToolDelivery }>();

  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      if (ms <= 0) return resolve();
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });

  const standingAnswer = async (delivery: ToolDelivery): Promise<ToolResponse> =>
    (await standing.get(delivery.name)?.(delivery)) ?? echo(delivery);

  const send = async (res: ServerResponse, delivery: ToolDelivery, response: ToolResponse): Promise<void> => {
    switch (response.kind) {
      case 'hang':
        return;
      case 'delay':
        await wait(response.ms);
        return send(res, delivery, response.then ?? (await standingAnswer(delivery)));
      case 'json':
        return write(res, delivery, response.status ?? 200, 'application/json', JSON.stringify(response.body), response.headers);
      case 'text':
        return write(res, delivery, response.status ?? 200, 'text/plain; charset=utf-8', response.body, response.headers);
      case 'status': {
        const headers: Record<string, string> = response.retryAfter === undefined ? {} : { 'retry-after': response.retryAfter };
        const body = response.body ?? { error: `Injected fault: HTTP ${response.status}` };
        return typeof body === 'string'
          ? write(res, delivery, response.status, 'text/plain; charset=utf-8', body, headers)
          : write(res, delivery, response.status, 'application/json', JSON.stringify(body), headers);
      }
    }
  };

  const handleCall = async (req: IncomingMessage, res: ServerResponse, name: string) => {
    const { raw, json } = await readJsonBody(req);
    const key = req.headers['idempotency-key'];
    const isObject = json !== null && typeof json === 'object' && !Array.isArray(json);
    const delivery: ToolDelivery = {
      at: Date.now(),
      name,
      idempotencyKey: Array.isArray(key) ? key[0] : key,
      body: isObject ? (json as ToolCallBody) : undefined,
      rawBody: raw,
      outcome: 'pending',
    };
    deliveries.push(delivery);
    const entry = { res, delivery };
    open.add(entry);
    res.on('close', () => {
      open.delete(entry);
      if (!res.writableFinished) delivery.outcome = 'aborted';
    });
    options.onDelivery?.(delivery);
    if (!isObject) return write(res, delivery, 400, 'application/json', JSON.stringify({ error: 'The body is not a JSON object.' }));
    // The queued answer is taken on arrival so one-shot answers line up with delivery order, whatever the latency.
    const queued = queues.get(name)?.shift();
    try {
      await wait(options.latencyMs ?? 0);
      await send(res, delivery, queued ?? (await standingAnswer(delivery)));
    } catch (err) {
      // A handler that throws is a test's bug: answer 500 with its message rather than leave the call hanging.
      write(res, delivery, 500, 'application/json', JSON.stringify({ error: err instanceof Error ? err.message : String(err) }));
    }
  };

  const server = await startHttpFake(
    (req, res) => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      const match = ROUTE.exec(path);
      if (req.method !== 'POST' || !match?.[1]) return sendJson(res, 404, { error: `Unknown route ${req.method} ${path}` });
      handleCall(req, res, decodeURIComponent(match[1])).catch((err: unknown) => sendJson(res, 500, { error: String(err) }));
    },
    {
      onClose: () => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        // Marked here because res 'close' may fire only after close() has resolved.
        for (const { res, delivery } of open) if (!res.writableFinished) delivery.outcome = 'aborted';
      },
    },
  );

  const byKey = () => {
    const groups = new Map<string, ToolDelivery[]>();
    for (const d of deliveries) {
      if (d.idempotencyKey === undefined) continue;
      groups.set(d.idempotencyKey, [...(groups.get(d.idempotencyKey) ?? []), d]);
    }
    return groups;
  };

  return {
    url: (name) => `${server.url}/tools/${encodeURIComponent(name)}`,
    deliveries,
    get requests() {
      return server.requests;
    },
    deliveriesFor: (key) => deliveries.filter((d) => d.idempotencyKey === key),
    byKey,
    conflictingKeys: () =>
      [...byKey()].filter(([, group]) => new Set(group.map((d) => canonicalJson([d.name, d.body?.name, d.body?.arguments]))).size > 1).map(([key]) => key),
    respond: (name, handler) => {
      if (handler === undefined) standing.delete(name);
      else standing.set(name, typeof handler === 'function' ? handler : () => handler);
    },
    enqueue: (name, ...responses) => void queues.set(name, [...(queues.get(name) ?? []), ...responses]),
    close: server.close,
  };
}

function write(res: ServerResponse, delivery: ToolDelivery, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  // A client gone (timeout, abort) is recorded by the 'close' listener; writing then would throw EPIPE noise.
  if (res.destroyed || res.writableEnded) return;
  delivery.status = status;
  // Set now, so a test that has its answer sees it; the 'close' listener downgrades it if the bytes never left.
  delivery.outcome = 'answered';
  res.writeHead(status, { 'content-type': contentType, ...headers });
  res.end(body);
}

// Postgres jsonb reorders object keys, so arguments restored from a checkpoint may come back in
// another order: the same arguments, which must not count as a conflict.
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}
