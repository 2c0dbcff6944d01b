/**
 * `GET /agents/{id}/stream`: Server-Sent Events of an agent: its view after each committed
 * transition, the text of its LLM call in flight, and resumption by event id (what the events are
 * and how ids work: runtime/agent-events.ts).
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { stream as streamBody } from 'hono/streaming';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { ServerResponse } from 'node:http';
import { parsePosition, type AgentEvent, type StreamPosition } from '../../runtime/agent-events.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { AppEnv } from '../env.js';
import { invalidEventId } from '../errors.js';
import { AgentParamsSchema } from './schemas.js';
import { errorResponses, type ApiApp, type RouteDeps } from './openapi.js';

const EVENTS_DESCRIPTION = [
  'Events, each with an `id`:',
  '- `snapshot`: the agent view (JSON, as `GET /agents/{id}`) now, then after each committed transition.',
  '- `token`: `{seq, turn, delta, index}`, the text of the LLM call in flight as it is generated: task `seq`, the call `turn` within the task from 0, `index` the delta\'s position in that call from 0. The deltas of a turn concatenated equal the answer committed for it.',
  '- `restart`: `{seq, turn}`, that call is asked again (a retry, or after a crash): the text streamed for it so far is void.',
  '- `dropped`: the client read too slowly and is disconnected; it reconnects with the last id it got.',
  'A client that reconnects with `Last-Event-ID` (or `?from=`) gets the events after that id that it missed, in order, then the live ones, with no duplicates. The stream ends after a view whose status is not `active`; coming back after that answers 204 (EventSource then stops reconnecting).',
].join('\n');

const streamRoute = createRoute({
  method: 'get',
  path: '/agents/{id}/stream',
  tags: ['agents'],
  summary: 'Server-Sent Events: snapshots after each committed transition, the tokens of the LLM call in flight, resumable by event id',
  description: EVENTS_DESCRIPTION,
  request: {
    params: AgentParamsSchema,
    query: z.object({
      from: z.string().optional().openapi({ description: 'An event id to resume after, as `Last-Event-ID` (which wins when both are sent)', example: '12.3.1.a1b2c31.40' }),
    }),
    headers: z.object({ 'last-event-id': z.string().optional().openapi({ description: 'The id of the last event received' }) }),
  },
  responses: {
    200: { description: 'A text/event-stream of `snapshot`, `token` and `restart` events', content: { 'text/event-stream': { schema: z.string() } } },
    204: { description: 'Resumed after the last event of an agent that is no longer active: nothing more will come' },
    ...errorResponses(400, 404),
  },
});

export function registerStreamRoutes(app: ApiApp, { runtime, shutdown }: Pick<RouteDeps, 'runtime' | 'shutdown'>): void {
  app.openapi(streamRoute, (c) => {
    const id = c.req.valid('header')['last-event-id'] ?? c.req.valid('query').from;
    return streamAgentEvents(c, runtime, c.req.valid('param').id, { from: readPosition(id), ...(shutdown ? { shutdown } : {}) });
  });
}

function readPosition(id: string | undefined): StreamPosition | undefined {
  if (id === undefined || id === '') return undefined;
  const position = parsePosition(id);
  if (!position) throw invalidEventId(id);
  return position;
}

/** The reconnection delay the stream asks its clients for. */
const RECONNECT_MS = 1_000;

export interface StreamOptions {
  from?: StreamPosition | undefined;
  /** Aborted when the server shuts down: open streams end so the server can close. */
  shutdown?: AbortSignal;
  /** A comment line this often keeps proxies from closing an idle stream (default 15 s). */
  keepAliveMs?: number;
  /** Text waiting for a slow client beyond which it is dropped (default 1 MiB). */
  maxPendingBytes?: number;
}

/** Where the events' text goes: the Node response itself, or a web stream (Hono's, where there is no Node response). */
interface EventSink {
  /** Resolves once the text is handed on (at once, unless the socket's buffer is full). */
  write(text: string): Promise<void> | void;
  onClose(listener: () => void): void;
}

/**
 * Writes the feed's events as they come. Events that arrive while a write is in flight are joined
 * into the next one (one socket write for many tokens); a client that lets more than
 * `maxPendingBytes` pile up gets `dropped` and is disconnected rather than held in memory. Served
 * by @hono/node-server, the text goes straight to the Node response: Hono's web-stream path (a
 * TransformStream, a ReadableStream, a TextEncoder per write) measured a fifth of the relay's CPU
 * per token (docs/performance.md, `stream`).
 */
export async function streamAgentEvents(
  c: Context<AppEnv>,
  runtime: Runtime,
  agentId: string,
  { from, shutdown, keepAliveMs = 15_000, maxPendingBytes = 1 << 20 }: StreamOptions = {},
): Promise<Response> {
  let pending = '';
  let wake: (() => void) | undefined;
  let overflowed = false;
  const emit = (event: AgentEvent) => {
    if (overflowed) return;
    pending += formatEvent(event);
    if (pending.length > maxPendingBytes) overflowed = true;
    wake?.();
  };
  const feed = await runtime.openEventFeed(agentId, from, emit); // a 404 is still a JSON error, not an empty stream
  if (feed.sent === 0 && feed.done) {
    // Came back after the last event of an agent that ended: 204 tells EventSource to stop.
    feed.close();
    return c.body(null, 204);
  }
  const headers = {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache',
    'X-Accel-Buffering': 'no', // nginx: pass events on as they come
  };
  const log = c.get('log');
  let ended = false;
  const end = () => {
    ended = true;
    wake?.();
  };
  void feed.ended.then(end);

  const pump = async (sink: EventSink) => {
    sink.onClose(end);
    shutdown?.addEventListener('abort', end, { once: true });
    const keepAlive = setInterval(() => {
      pending += ': keep-alive\n\n';
      wake?.();
    }, keepAliveMs);
    // A dropped connection comes back within a second (EventSource's default is about 3 s).
    pending = `retry: ${RECONNECT_MS}\n\n${pending}`;
    try {
      for (;;) {
        if (overflowed) {
          const dropped = { reason: 'slow_client', message: 'The client read too slowly; reconnect with the last event id received.' };
          await sink.write(`event: dropped\ndata: ${JSON.stringify(dropped)}\n\n`);
          log.warn({ agentId }, 'stream client dropped: it read too slowly');
          return;
        }
        if (pending) {
          const text = pending;
          pending = '';
          await sink.write(text);
          continue;
        }
        if (ended || shutdown?.aborted) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } catch (err) {
      log.error({ err }, 'agent stream failed');
      const error = { code: 'internal', message: 'The stream failed on our side; the error was logged.' };
      await sink.write(`event: error\ndata: ${JSON.stringify({ error })}\n\n`);
    } finally {
      clearInterval(keepAlive);
      shutdown?.removeEventListener('abort', end);
      feed.close();
    }
  };

  const outgoing = (c.env as { outgoing?: unknown } | undefined)?.outgoing;
  if (outgoing instanceof ServerResponse) {
    outgoing.writeHead(200, { ...headers, 'X-Request-Id': c.get('requestId') });
    outgoing.flushHeaders();
    void pump(nodeSink(outgoing)).finally(() => outgoing.end());
    return RESPONSE_ALREADY_SENT;
  }
  for (const [name, value] of Object.entries(headers)) c.header(name, value);
  return streamBody(c, (stream) =>
    pump({ write: async (text) => void (await stream.write(text)), onClose: (listener) => stream.onAbort(listener) }),
  );
}

/** A Node response as a sink: a write waits only when the socket's buffer is full (or the client has gone). */
function nodeSink(res: ServerResponse): EventSink {
  return {
    write(text) {
      if (res.destroyed || res.writableEnded) return;
      if (res.write(text)) return;
      return new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.once('drain', done);
        res.once('close', done);
      });
    },
    onClose(listener) {
      res.once('close', listener);
    },
  };
}

function formatEvent(event: AgentEvent): string {
  if (event.event === 'token') {
    // The hot path (one per token): the same JSON as JSON.stringify(event.data), built by hand.
    const { seq, turn, delta, index } = event.data;
    return `event: token\nid: ${event.id}\ndata: {"seq":${seq},"turn":${turn},"delta":${JSON.stringify(delta)},"index":${index}}\n\n`;
  }
  const data = event.event === 'snapshot' ? JSON.stringify(event.view) : JSON.stringify(event.data);
  return `event: ${event.event}\nid: ${event.id}\ndata: ${data}\n\n`;
}
