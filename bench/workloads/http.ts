/**
 * `http`: durable `POST /agents/:id/events` (202 only after the event is committed, then processed
 * into a checkpoint) under autocannon load, against a bare Hono route answering 202, same stack.
 * The durable store runs at `synchronous=FULL`, the shipped default (`HTTP_SYNCHRONOUS=normal` for NORMAL).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import { median, report, round, sized } from '../lib.js';

const DURATION_S = sized('HTTP_DURATION_S', 5, 0.5);
const WARM_UP_S = sized(undefined, 1, 0.2);
const RUNS = sized(undefined, 3, 1);
/** The agents the events go to, round robin: as many as `http-server.ts` spawns. */
const AGENTS = sized(undefined, 100, 10);
/** `synchronous` of the durable server's store: FULL (the shipped default) unless `HTTP_SYNCHRONOUS=normal`. */
const SYNCHRONOUS = process.env.HTTP_SYNCHRONOUS === 'normal' ? 'normal' : 'full';

interface Server {
  port: number;
  /** Starts counting CPU time and requests (after the warm-up). */
  startCounting(): void;
  /** Stops the server; resolves with the CPU time it spent per request since `startCounting`. */
  stop(): Promise<number>;
}

async function startServer(mode: 'durable' | 'bare' | 'api'): Promise<Server> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'http-server.ts'), mode, SYNCHRONOUS], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LOG_LEVEL: 'silent' },
  });
  const lines = readline.createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`server exited (${code})`))));
  exited.catch(() => {}); // observed below, where it matters
  const next = async () => ((await Promise.race([lines.next(), exited])) as IteratorResult<string>).value as string;
  const port = Number(await next());
  return {
    port,
    startCounting: () => child.kill('SIGUSR2'),
    async stop() {
      child.kill('SIGTERM');
      return (JSON.parse(await next()) as { cpuUsPerRequest: number }).cpuUsPerRequest;
    },
  };
}

/**
 * Runs autocannon against the server; `failed` counts every request that did not get a 2xx answer:
 * non-2xx answers plus connection errors (autocannon's `errors` already includes its `timeouts`,
 * which are reported apart only to say what went wrong).
 */
async function load(
  port: number,
  duration = DURATION_S,
): Promise<{ rps: number; p99: number; failed: number; non2xx: number; errors: number; timeouts: number }> {
  let i = 0;
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: 50,
    duration,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'ping' }),
        setupRequest: (request) => ({ ...request, path: `/agents/agent-${i++ % AGENTS}/events` }),
      },
    ],
  });
  const { non2xx, errors, timeouts } = result;
  return { rps: result.requests.average, p99: result.latency.p99, failed: non2xx + errors, non2xx, errors, timeouts };
}

/** Every request of every mode must have been answered 2xx: a figure measured over failures means nothing. */
function assertNoFailure(mode: string, what: string, figures: Awaited<ReturnType<typeof load>>): void {
  if (figures.failed > 0) {
    throw new Error(
      `${mode}: ${figures.failed} request(s) failed during the ${what} ` +
        `(${figures.non2xx} non-2xx answer(s), ${figures.errors} connection error(s) of which ${figures.timeouts} timeout(s))`,
    );
  }
}

const rps = { bare: [] as number[], api: [] as number[], durable: [] as number[] };
const cpu = { bare: [] as number[], api: [] as number[], durable: [] as number[] };
let p99 = 0;
for (let run = 0; run < RUNS; run++) {
  for (const mode of ['bare', 'api', 'durable'] as const) {
    const server = await startServer(mode);
    const warmUp = await load(server.port, WARM_UP_S); // warm-up: JIT, connections, SQLite pages
    server.startCounting();
    const figures = await load(server.port);
    cpu[mode].push(await server.stop()); // stopped before any throw below: no server left behind
    assertNoFailure(mode, 'warm-up', warmUp);
    assertNoFailure(mode, `measured run ${run + 1}`, figures);
    rps[mode].push(figures.rps);
    if (mode === 'durable') p99 = Math.max(p99, figures.p99);
  }
}
report({
  ratio: round(median(rps.durable) / median(rps.bare)),
  durableRps: Math.round(median(rps.durable)),
  bareRps: Math.round(median(rps.bare)),
  // The same API stack with nothing stored: what durability itself costs, HTTP layer aside.
  apiNoStoreRps: Math.round(median(rps.api)),
  durabilityRatio: round(median(rps.durable) / median(rps.api)),
  durableP99Ms: p99,
  // Server CPU time per request (µs): steadier than requests/s when the machine is shared.
  bareCpuUs: Math.round(median(cpu.bare)),
  apiCpuUs: Math.round(median(cpu.api)),
  durableCpuUs: Math.round(median(cpu.durable)),
  cpuRatio: round(median(cpu.bare) / median(cpu.durable)),
  synchronous: SYNCHRONOUS.toUpperCase(),
});
