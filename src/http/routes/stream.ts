/** `GET /agents/{id}/stream`: the agent's view as Server-Sent Events, now and after each committed transition. */
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Runtime } from '../../runtime/runtime.js';
import type { AgentView } from '../../runtime/views.js';
import type { AppEnv } from '../env.js';
import { AgentParamsSchema } from './schemas.js';
import { errorResponses, type ApiApp, type RouteDeps } from './openapi.js';

const streamRoute = createRoute({
  method: 'get',
  path: '/agents/{id}/stream',
  tags: ['agents'],
  summary: 'Server-Sent Events: a `snapshot` event with the agent view now and after each committed transition',
  description:
    'Each event is `event: snapshot` with the agent view as JSON in `data`. The stream ends after a view whose status is not `active`.',
  request: { params: AgentParamsSchema },
  responses: {
    200: { description: 'A text/event-stream of `snapshot` events', content: { 'text/event-stream': { schema: z.string() } } },
    ...errorResponses(400, 404),
  },
});

export function registerStreamRoutes(app: ApiApp, { runtime, shutdown }: Pick<RouteDeps, 'runtime' | 'shutdown'>): void {
  app.openapi(streamRoute, (c) => streamAgentViews(c, runtime, c.req.valid('param').id, shutdown ? { shutdown } : {}));
}

export interface StreamOptions {
  /** Aborted when the server shuts down: open streams end so the server can close. */
  shutdown?: AbortSignal;
  /** A comment line this often keeps proxies from closing an idle stream (default 15 s). */
  keepAliveMs?: number;
}

/**
 * Server-Sent Events: one `snapshot` event with the agent view now, then one after each committed
 * transition (runtime.watch). The stream ends after a view whose status is not `active` (nothing
 * will change any more), when the client goes away, or at shutdown; the watcher is removed then.
 */
export async function streamAgentViews(
  c: Context<AppEnv>,
  runtime: Runtime,
  agentId: string,
  { shutdown, keepAliveMs = 15_000 }: StreamOptions = {},
): Promise<Response> {
  const queue: AgentView[] = [];
  let wake: (() => void) | undefined;
  // Watch before reading the first view, so no transition falls between the two.
  const unwatch = runtime.watch(agentId, (view) => {
    queue.push(view);
    wake?.();
  });
  let first: AgentView;
  try {
    first = await runtime.view(agentId); // a 404 is still a JSON error, not an empty stream
  } catch (err) {
    unwatch();
    throw err;
  }
  queue.unshift(first);
  const log = c.get('log');
  return streamSSE(c, async (stream) => {
    let ended = false;
    const end = () => {
      ended = true;
      wake?.();
    };
    stream.onAbort(end);
    shutdown?.addEventListener('abort', end, { once: true });
    const keepAlive = setInterval(() => void stream.write(': keep-alive\n\n'), keepAliveMs);
    try {
      if (shutdown?.aborted) return;
      let last = '';
      while (!ended) {
        const view = queue.shift();
        if (!view) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        const data = JSON.stringify(view);
        if (data === last) continue; // the same commit seen by both the first read and the watcher
        last = data;
        await stream.writeSSE({ event: 'snapshot', data });
        if (view.status !== 'active') break;
      }
    } catch (err) {
      log.error({ err }, 'agent stream failed');
      const error = { code: 'internal', message: 'The stream failed on our side; the error was logged.' };
      await stream.writeSSE({ event: 'error', data: JSON.stringify({ error }) });
    } finally {
      clearInterval(keepAlive);
      shutdown?.removeEventListener('abort', end);
      unwatch();
    }
  });
}
