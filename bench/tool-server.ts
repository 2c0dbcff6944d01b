/**
 * The HTTP tools of the `tools` workload: a bare node:http server answering every `POST` at once
 * with a small JSON result, so what the workload measures is the runtime's side of a tool call
 * (the committed answer, the POST, the recorded effect, the results back to the model).
 *
 * `in-process` runs it on the bench's own event loop; `child` in a process of its own (this file
 * run as a script prints its port), which keeps the server's CPU off the runtime's thread.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';

export type ToolServerPlace = 'in-process' | 'child';

export interface BenchToolServer {
  /** `http://127.0.0.1:<port>/tools/<name>` (an IP literal: no name lookup per call). */
  url(name: string): string;
  /** Tool calls answered so far (a child reports its count when asked). */
  calls(): Promise<number>;
  close(): Promise<void>;
}

export async function startBenchToolServer(place: ToolServerPlace): Promise<BenchToolServer> {
  return place === 'child' ? startChild() : startInProcess();
}

async function startInProcess(): Promise<BenchToolServer> {
  const { port, calls, close } = await listen();
  return { url: (name) => `http://127.0.0.1:${port}/tools/${name}`, calls: async () => calls(), close };
}

/** Answers as a tool would: reads the call, answers 200 with JSON naming it. `GET /calls`: the count. */
async function listen(): Promise<{ port: number; calls: () => number; close: () => Promise<void> }> {
  let calls = 0;
  const server = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ calls }));
      return;
    }
    let size = 0;
    req.on('data', (chunk: Buffer) => (size += chunk.length));
    req.on('end', () => {
      calls++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, tool: req.url, bytes: size, value: 42 }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { port, calls: () => calls, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

async function startChild(): Promise<BenchToolServer> {
  const child = spawn(process.execPath, ['--import', 'tsx', import.meta.filename, 'serve'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  const port = Number(line);
  const base = `http://127.0.0.1:${port}`;
  return {
    url: (name) => `${base}/tools/${name}`,
    calls: async () => ((await (await fetch(`${base}/calls`)).json()) as { calls: number }).calls,
    close: async () => {
      child.kill('SIGTERM');
      if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
    },
  };
}

if (process.argv[1] === import.meta.filename && process.argv[2] === 'serve') {
  const { port } = await listen();
  process.stdout.write(`${port}\n`);
}
