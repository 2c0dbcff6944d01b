/**
 * `http`: durable `POST /agents/:id/events` (202 only after the event is committed, then processed
 * into a checkpoint) under autocannon load, against a bare Hono route answering 202, same stack.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import { median, report, round } from '../lib.js';

const DURATION_S = Number(process.env.HTTP_DURATION_S ?? 5);
const AGENTS = 100;

async function startServer(mode: 'durable' | 'bare' | 'api'): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'http-server.ts'), mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LOG_LEVEL: 'silent' },
  });
  const port = await new Promise<number>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).once('line', (line) => resolve(Number(line)));
    child.once('exit', (code) => reject(new Error(`server exited (${code})`)));
  });
  return { child, port };
}

async function load(port: number): Promise<{ rps: number; non2xx: number; p99: number }> {
  let i = 0;
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: 50,
    duration: DURATION_S,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'ping' }),
        setupRequest: (request) => ({ ...request, path: `/agents/agent-${i++ % AGENTS}/events` }),
      },
    ],
  });
  return { rps: result.requests.average, non2xx: result.non2xx, p99: result.latency.p99 };
}

const rps = { bare: [] as number[], api: [] as number[], durable: [] as number[] };
let errors = 0;
let p99 = 0;
for (let run = 0; run < 3; run++) {
  for (const mode of ['bare', 'api', 'durable'] as const) {
    const server = await startServer(mode);
    const figures = await load(server.port);
    server.child.kill('SIGKILL');
    rps[mode].push(figures.rps);
    if (mode === 'durable') (errors += figures.non2xx), (p99 = Math.max(p99, figures.p99));
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
  non2xx: errors,
});
