/**
 * The LLM of the `stream` workload: an OpenAI-compatible `POST /v1/chat/completions` that streams
 * (`stream: true`) as the real API does: a role chunk, one `chat.completion.chunk` per token, a
 * finish chunk, a usage chunk with `choices: []` when `stream_options.include_usage`, then
 * `data: [DONE]`. The task (the last user message) says how much and how fast: `streamTask(n, ms)`.
 *
 * Each token's text is `t<send time>/<k> `: the time (ms since the epoch, `performance.timeOrigin +
 * performance.now()`, with fractions) at which this server wrote it, and its number from 0. A relay
 * passes the text on unchanged, so whoever receives it, directly or through the runtime, can tell
 * the token's latency since it left here (same machine, same clock) and check that none is missing.
 *
 * With an interval (`ms` > 0) each call's tokens are written one by one on a schedule of its own
 * (`start + (k + 1) × ms`, as many at once as are due when a timer fires late); with 0, as fast as
 * the socket takes them, 64 to a write. Run as a script (`serve`), in a child process of its own
 * (`startStreamLlm`), so that its CPU is not counted as the runtime's; `GET /stats` answers the
 * calls and tokens served and its CPU time so far.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';

/** Wall-clock ms with fractions, comparable between processes of one machine (up to their clocks' offset, constant over a run). */
export const clock = () => performance.timeOrigin + performance.now();

/** The task that makes this server stream `tokens` tokens, one every `everyMs` (0: as fast as it can). */
export function streamTask(tokens: number, everyMs: number): string {
  return `Stream ${tokens} tokens every ${everyMs} ms.`;
}

const TASK = /Stream (\d+) tokens every ([\d.]+) ms\./;

/** The send time and number a token's text carries; undefined for text this server did not write. */
export function readToken(text: string): { sentAt: number; k: number } | undefined {
  const slash = text.indexOf('/');
  if (text[0] !== 't' || slash < 0) return undefined;
  return { sentAt: Number(text.slice(1, slash)), k: Number(text.slice(slash + 1, -1)) };
}

export interface StreamLlmStats {
  completions: number;
  tokens: number;
  /** The server process's CPU time (user + system) since it started. */
  cpuUs: number;
}

export interface StreamLlm {
  /** The `baseURL` of an OpenAI client: `http://127.0.0.1:<port>/v1`. */
  baseURL: string;
  stats(): Promise<StreamLlmStats>;
  close(): Promise<void>;
}

export async function startStreamLlm(): Promise<StreamLlm> {
  const child = spawn(process.execPath, ['--import', 'tsx', import.meta.filename, 'serve'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  const base = `http://127.0.0.1:${Number(line)}`;
  return {
    baseURL: `${base}/v1`,
    stats: async () => (await (await fetch(`${base}/stats`)).json()) as StreamLlmStats,
    close: async () => {
      child.kill('SIGTERM');
      if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
    },
  };
}

/** Tokens written per `write` when streaming as fast as the socket takes them. */
const FLOOD_BATCH = 64;

async function listen(): Promise<number> {
  let completions = 0;
  let tokens = 0;
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/stats') {
      const cpu = process.cpuUsage();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ completions, tokens, cpuUs: cpu.user + cpu.system }));
      return;
    }
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      fail(res, 404, `No route ${req.method} ${req.url}`);
      return;
    }
    void readBody(req).then((body) => {
      const request = JSON.parse(body) as { model?: string; stream?: boolean; stream_options?: { include_usage?: boolean }; messages?: { role: string; content: unknown }[] };
      const task = request.messages?.findLast((m) => m.role === 'user')?.content;
      const match = typeof task === 'string' ? TASK.exec(task) : null;
      if (!request.stream || typeof task !== 'string' || !match) {
        fail(res, 400, 'This server only streams, and only tasks made by streamTask().');
        return;
      }
      completions++;
      stream(res, {
        id: `chatcmpl-bench-${completions}`,
        model: request.model ?? 'bench',
        usage: request.stream_options?.include_usage === true,
        promptTokens: task.length,
        tokens: Number(match[1]),
        everyMs: Number(match[2]),
        onToken: () => tokens++,
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

function stream(
  res: ServerResponse,
  call: { id: string; model: string; usage: boolean; promptTokens: number; tokens: number; everyMs: number; onToken: () => void },
): void {
  const head = `data: {"id":"${call.id}","object":"chat.completion.chunk","created":${Math.floor(Date.now() / 1000)},"model":${JSON.stringify(call.model)},"choices":[`;
  const chunk = (delta: string, finish: string) => `${head}{"index":0,"delta":${delta},"finish_reason":${finish}}]}\n\n`;
  const token = (k: number) => {
    call.onToken();
    return chunk(`{"content":"t${clock().toFixed(3)}/${k} "}`, 'null');
  };
  let closed = false;
  res.on('close', () => (closed = true));
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(chunk('{"role":"assistant","content":""}', 'null'));
  const end = () => {
    res.write(chunk('{}', '"stop"'));
    if (call.usage) {
      const usage = { prompt_tokens: call.promptTokens, completion_tokens: call.tokens, total_tokens: call.promptTokens + call.tokens };
      res.write(`${head}],"usage":${JSON.stringify(usage)}}\n\n`);
    }
    res.end('data: [DONE]\n\n');
  };
  let k = 0;
  if (call.everyMs > 0) {
    const start = clock();
    const tick = () => {
      if (closed) return;
      const now = clock();
      while (k < call.tokens && start + (k + 1) * call.everyMs <= now) res.write(token(k++));
      if (k === call.tokens) end();
      else setTimeout(tick, start + (k + 1) * call.everyMs - now);
    };
    setTimeout(tick, call.everyMs);
    return;
  }
  // As fast as it can: a batch per write, the next after 'drain' when the socket's buffer is full,
  // else on the next turn of the event loop (so that every open call gets its turns).
  const flood = () => {
    if (closed) return;
    let batch = '';
    for (const stop = Math.min(call.tokens, k + FLOOD_BATCH); k < stop; ) batch += token(k++);
    const more = res.write(batch);
    if (k === call.tokens) end();
    else if (more) setImmediate(flood);
    else res.once('drain', flood);
  };
  flood();
}

function fail(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message, type: 'invalid_request_error' } }));
}

async function readBody(req: IncomingMessage): Promise<string> {
  let body = '';
  req.setEncoding('utf8');
  for await (const part of req) body += part as string;
  return body;
}

if (process.argv[1] === import.meta.filename && process.argv[2] === 'serve') {
  process.stdout.write(`${await listen()}\n`);
}
