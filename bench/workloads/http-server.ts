/**
 * The server side of the `http` workload, in its own process so the load generator does not share
 * its event loop. `durable`: the real API over SQLite; `bare`: a Hono route answering 202 without
 * storing anything, on the same HTTP server stack; `api`: our API with the runtime's send stubbed.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { assign, setup } from 'xstate';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { createServer } from '../../src/http/app.js';
import { sized, tempFile } from '../lib.js';

/** As many as `http.ts` addresses its events to. */
const AGENTS = sized(undefined, 100, 10);

/** One checkpoint per event: the full durable path (inbox commit, delivery, transition, checkpoint). */
const counter = setup({ types: { context: {} as { pings: number }, events: {} as { type: 'ping'; n?: number } } }).createMachine({
  id: 'counter',
  context: { pings: 0 },
  on: { ping: { actions: assign({ pings: ({ context }) => context.pings + 1 }) } },
});

const mode = process.argv[2];
/** `synchronous` of the durable server's store: FULL, the shipped default, unless `normal` is passed. */
const synchronous = process.argv[3] === 'normal' ? 'normal' : 'full';
let fetch: (request: Request) => Response | Promise<Response>;
if (mode === 'durable' || mode === 'api') {
  // Wired as `serve` wires it (metrics on every transition), with request logs silenced.
  const metrics = createMetrics();
  const runtime = await createRuntime({
    store: await openSqliteStore(tempFile(), { synchronous }),
    machines: [{ name: 'counter', machine: counter }],
    observer: metrics.observer,
  });
  for (let i = 0; i < AGENTS; i++) await runtime.spawn('counter', { id: `agent-${i}` });
  // `api`: the same API stack (validation, logging, metrics, tracing) with nothing stored, to tell
  // what the HTTP layer costs from what durability costs.
  if (mode === 'api') runtime.send = async () => ({ seq: 1, duplicate: false });
  fetch = createServer({ runtime, metrics }).fetch;
} else {
  const bare = new Hono();
  bare.post('/agents/:id/events', async (c) => {
    await c.req.json();
    return c.json({ seq: 1 }, 202);
  });
  fetch = bare.fetch;
}
// CPU per request, the steadier figure on a noisy machine: SIGUSR2 starts counting (after warm-up),
// SIGTERM prints what was counted and exits.
let requests = 0;
let since: NodeJS.CpuUsage | undefined;
const counted = (request: Request) => (requests++, fetch(request));
process.on('SIGUSR2', () => ((requests = 0), (since = process.cpuUsage())));
process.on('SIGTERM', () => {
  const used = process.cpuUsage(since);
  process.stdout.write(`${JSON.stringify({ cpuUsPerRequest: (used.user + used.system) / Math.max(1, requests) })}\n`, () => process.exit(0));
});
serve({ fetch: counted, port: 0, hostname: '127.0.0.1' }, (info) => process.stdout.write(`${info.port}\n`));
