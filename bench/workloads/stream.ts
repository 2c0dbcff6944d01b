/**
 * `stream`: LLM tokens relayed by `GET /agents/:id/stream`, against the same clients reading the LLM
 * directly, in one run. The LLM is `bench/stream-llm.ts` (an OpenAI-compatible streaming server in
 * a child process) whose every token carries its send time; the clients are 100 SSE readers in
 * another child process (this file run with `clients`), so this process holds the relay alone and
 * its CPU and RSS are the relay's.
 *
 * Three sides, the same 100 clients each time:
 * - `direct`: the clients POST to the LLM themselves and parse its SSE: the baseline.
 * - `runtime`: 100 fresh `agent`s of the reference machine, each given one task once a client
 *   follows it on `/agents/:id/stream` (a real HTTP server, SQLite store); each task's one LLM call
 *   streams through the real `openai` client; the clients take the `token` events.
 * - `bare`: a relay with nothing around it, in this process: `GET /bare/:i` opens the LLM call
 *   with `node:http`, parses its SSE and writes each token as a `token` event, one write each. What
 *   reading and writing a token costs on this machine before any of the runtime's code runs.
 *
 * Latency, at a fixed rate (`STREAM_EVERY_MS`, default one token every 20 ms per stream, 100 streams:
 * 5,000 tokens/s in all), `STREAM_TOKENS` (300) tokens per stream: a token's latency is the time
 * the client's socket read that carried it ended, minus the send time in its text. `addedP50Ms` /
 * `addedP99Ms` = runtime percentile − direct percentile, each the median over `STREAM_ROUNDS` (2)
 * rounds of the three sides, the order reversed every other round (an offset between the children's
 * clocks cancels in the difference). `*SteadyP99Ms`: the same over the middle 80 % of each stream,
 * without the bursts of the 100 calls starting and ending together.
 *
 * Throughput: the LLM streams as fast as it can (`STREAM_FLOOD_TOKENS`, 1,500 per stream, 64 to a
 * write): `tokensPerSec`, the tokens the clients received through the runtime from the first to
 * the last, with the CPU of each process over the phase (% of one core), and the same for the other
 * two sides (`direct` is the ceiling of the LLM and the clients).
 *
 * Every client must receive every token 0..n−1 of its stream in order, each with the number its
 * text carries, and every agent must commit the whole answer, or the run fails.
 * `STREAM_PROFILE=<dir>`: a CPU profile of this process over each runtime phase.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { on, once, setMaxListeners } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import inspector from 'node:inspector/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createServer } from '../../src/http/app.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { median, report, round, sized, tempFile } from '../lib.js';
import { clock, readToken, startStreamLlm, streamTask, type StreamLlm } from '../stream-llm.js';

const STREAMS = sized(undefined, 100, 4);
const TOKENS = sized('STREAM_TOKENS', 300, 20);
const EVERY_MS = sized('STREAM_EVERY_MS', 20, 5);
const ROUNDS = sized('STREAM_ROUNDS', 2, 1);
const WARMUP_TOKENS = sized(undefined, 100, 10);
const FLOOD_TOKENS = sized('STREAM_FLOOD_TOKENS', 1_500, 100);
const PROFILE_DIR = process.env.STREAM_PROFILE;

type Side = 'direct' | 'bare' | 'runtime';

// --- the clients (a child process) ---------------------------------------------------------------

type ClientJob =
  | { kind: 'direct'; baseURL: string; streams: number; tokens: number; everyMs: number }
  /** GET each path; tell the parent `ready` once each has sent its first event. */
  | { kind: 'relayed'; base: string; paths: string[]; tokens: number };

type ClientMessage = { type: 'ready' } | { type: 'done'; result: ClientResult } | { type: 'error'; message: string };

interface ClientResult {
  tokens: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** The p99 of the tokens in the middle 80 % of each stream: without the bursts of 100 calls starting and ending together. */
  steadyP99: number;
  /** Receive times of the first and last token, over every stream. */
  firstAt: number;
  lastAt: number;
  /** The clients' CPU time over the job. */
  cpuUs: number;
}

async function runClients(): Promise<void> {
  for await (const [job] of on(process, 'message') as AsyncIterable<[ClientJob]>) {
    try {
      process.send!({ type: 'done', result: await clientJob(job) } satisfies ClientMessage);
    } catch (err) {
      process.send!({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) } satisfies ClientMessage);
    }
  }
}

async function clientJob(job: ClientJob): Promise<ClientResult> {
  const cpuBefore = process.cpuUsage();
  const streams = job.kind === 'direct' ? job.streams : job.paths.length;
  const latencies = new Float64Array(streams * job.tokens);
  const steady = new Float64Array(streams * job.tokens);
  let count = 0;
  let steadyCount = 0;
  let firstAt = Infinity;
  let lastAt = 0;
  /** Takes token `index` of a stream, whose text must carry that number. */
  const take = (stream: string, index: number, expected: number, text: string, at: number) => {
    const token = readToken(text);
    if (index !== expected || token?.k !== index) {
      throw new Error(`${stream}: token ${index} (text ${JSON.stringify(text)}) where token ${expected} was due`);
    }
    latencies[count++] = at - token.sentAt;
    if (index >= job.tokens * 0.1 && index < job.tokens * 0.9) steady[steadyCount++] = at - token.sentAt;
    if (at < firstAt) firstAt = at;
    if (at > lastAt) lastAt = at;
  };
  if (job.kind === 'direct') {
    const body = completionRequest(job.tokens, job.everyMs);
    await Promise.all(
      Array.from({ length: streams }, async (_, i) => {
        const name = `direct stream ${i}`;
        let next = 0;
        await readEvents(name, completionOptions(job.baseURL), body, (_event, data, at) => {
          if (data === '[DONE]') return true;
          const content = (JSON.parse(data) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content;
          if (content) take(name, next, next++, content, at);
          return false;
        });
        if (next !== job.tokens) throw new Error(`${name}: ended after ${next} of ${job.tokens} tokens`);
      }),
    );
  } else {
    const url = new URL(job.base);
    let ready = 0;
    await Promise.all(
      job.paths.map(async (streamPath) => {
        let next = 0;
        let first = true;
        await readEvents(streamPath, { host: url.hostname, port: url.port, path: streamPath }, undefined, (event, data, at) => {
          if (first) {
            // The first event (the agent's view): the feed is subscribed, nothing of the task can be missed from here.
            first = false;
            if (++ready === job.paths.length) process.send!({ type: 'ready' } satisfies ClientMessage);
          }
          if (event === 'snapshot') return false;
          if (event !== 'token') throw new Error(`${streamPath}: unexpected event ${event}: ${data}`);
          const token = JSON.parse(data) as { seq: number; turn: number; delta: string; index: number };
          if (token.seq !== 1 || token.turn !== 0) throw new Error(`${streamPath}: a token of call ${token.seq}.${token.turn}, not 1.0`);
          take(streamPath, token.index, next++, token.delta, at);
          return next === job.tokens;
        });
        if (next !== job.tokens) throw new Error(`${streamPath}: ended after ${next} of ${job.tokens} tokens`);
      }),
    );
  }
  if (count !== latencies.length) throw new Error(`${count} tokens received, ${latencies.length} expected`);
  latencies.sort();
  const sortedSteady = steady.subarray(0, steadyCount).sort();
  const at = (values: Float64Array, q: number) => round(values[Math.min(values.length - 1, Math.ceil(q * values.length) - 1)]!, 3);
  const cpu = process.cpuUsage(cpuBefore);
  return {
    tokens: count,
    p50: at(latencies, 0.5),
    p90: at(latencies, 0.9),
    p99: at(latencies, 0.99),
    max: at(latencies, 1),
    steadyP99: at(sortedSteady, 0.99),
    firstAt,
    lastAt,
    cpuUs: cpu.user + cpu.system,
  };
}

/** The body of a streamed chat completion as the `openai` client sends it, of `streamTask(tokens, everyMs)`. */
function completionRequest(tokens: number, everyMs: number): string {
  return JSON.stringify({
    model: 'bench-stream',
    messages: [{ role: 'user', content: streamTask(tokens, everyMs) }],
    stream: true,
    stream_options: { include_usage: true },
  });
}

function completionOptions(baseURL: string): http.RequestOptions {
  const url = new URL(`${baseURL}/chat/completions`);
  return { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json' } };
}

/**
 * Reads a text/event-stream: `onEvent` gets each event with the time the socket read that carried
 * it ended, and returns true to close the stream. Resolves when it was closed so, or ended.
 */
function readEvents(
  name: string,
  options: http.RequestOptions,
  body: string | undefined,
  onEvent: (event: string, data: string, at: number) => boolean,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (err?: unknown) => {
      if (settled) return;
      settled = true;
      req.destroy();
      if (err) reject(err instanceof Error ? err : new Error(String(err)));
      else resolve();
    };
    const req = http.request(options, (res) => {
      if (res.statusCode !== 200) return settle(new Error(`${name}: HTTP ${res.statusCode}`));
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (text: string) => {
        const at = clock();
        buffer += text;
        let start = 0;
        try {
          for (let end = buffer.indexOf('\n\n'); end >= 0 && !settled; end = buffer.indexOf('\n\n', start)) {
            let event = 'message';
            let data: string | undefined;
            for (const line of buffer.slice(start, end).split('\n')) {
              if (line.startsWith('data: ')) data = data === undefined ? line.slice(6) : `${data}\n${line.slice(6)}`;
              else if (line.startsWith('event: ')) event = line.slice(7);
            }
            start = end + 2;
            if (data !== undefined && onEvent(event, data, at)) settle();
          }
        } catch (err) {
          settle(err);
        }
        buffer = buffer.slice(start);
      });
      res.on('end', () => settle());
      res.on('error', settle);
    });
    req.on('error', settle);
    signal?.addEventListener('abort', () => settle(), { once: true });
    req.end(body);
  });
}

// --- the relays (this process) -------------------------------------------------------------------

interface Clients {
  run(job: ClientJob, whenReady?: () => Promise<void>): Promise<ClientResult>;
  close(): Promise<void>;
}

function startClients(): Clients {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', import.meta.filename, 'clients'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  // Ends the wait for a message if the process exits.
  const exited = new AbortController();
  child.once('exit', (code, signal) => exited.abort(new Error(`the clients process exited (${code ?? signal})`)));
  const messages = on(child, 'message', { signal: exited.signal }) as AsyncIterator<[ClientMessage]>;
  const next = async (): Promise<ClientMessage> => {
    const { value, done } = await messages.next();
    if (done) throw new Error('the clients process went away');
    if (value[0].type === 'error') throw new Error(`clients: ${value[0].message}`);
    return value[0];
  };
  return {
    async run(job, whenReady) {
      child.send(job);
      if (whenReady) {
        if ((await next()).type !== 'ready') throw new Error('clients: done before ready');
        await whenReady();
      }
      const message = await next();
      if (message.type !== 'done') throw new Error(`clients: ${message.type} where done was due`);
      return message.result;
    },
    async close() {
      child.kill('SIGTERM');
      if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
    },
  };
}

interface Relay {
  /** The paths the clients follow, one per stream. */
  open(): Promise<string[]>;
  /** Starts the streams' LLM calls; resolves when every call's answer is in (committed, for the runtime). */
  go(tokens: number, everyMs: number): Promise<void>;
}

/** The runtime's relay: 100 fresh agents per phase, each given one task once its client follows it. */
function runtimeRelay(runtime: Runtime): Relay {
  let agents = 0;
  let ids: string[] = [];
  return {
    async open() {
      ids = Array.from({ length: STREAMS }, () => `stream-${++agents}`);
      await Promise.all(ids.map((id) => runtime.spawn('agent', { id, input: { model: 'bench-stream' } })));
      return ids.map((id) => `/agents/${id}/stream`);
    },
    async go(tokens, everyMs) {
      const answered = Promise.all(ids.map((id) => answeredOnce(runtime, id)));
      await Promise.all(ids.map((id) => runtime.send(id, { type: 'task.add', task: streamTask(tokens, everyMs) })));
      await answered;
      for (const id of ids) {
        const response = ((await runtime.view(id)).context as { results: { response: string }[] }).results[0]?.response ?? '';
        const count = response.split(' ').length - 1;
        if (count !== tokens) throw new Error(`${id}: its committed answer has ${count} tokens, not ${tokens}`);
      }
    },
  };
}

/** Resolves once the agent has answered its one task and rests again; rejects if a step of it failed. */
function answeredOnce(runtime: Runtime, id: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const stop = runtime.watch(id, (view) => {
      const { lastError } = view.context as { lastError: unknown };
      if (lastError) {
        stop();
        reject(new Error(`${id}: ${JSON.stringify(lastError)}`));
      } else if (view.progress === 1 && view.state === 'idle') {
        stop();
        resolve();
      }
    });
  });
}

/**
 * The bare relay: `GET /bare/:i` answers an empty `snapshot` at once, then on `go` each opens its LLM
 * call (`node:http`), and writes each token as the runtime's stream would (`token`, the same data),
 * one `write` per token.
 */
async function startBareRelay(llm: StreamLlm): Promise<Relay & { port: number; close(): Promise<void> }> {
  let waiting: http.ServerResponse[] = [];
  let opened = 0;
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write('event: snapshot\ndata: {}\n\n');
    waiting.push(res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    async open() {
      return Array.from({ length: STREAMS }, () => `/bare/${++opened}`);
    },
    async go(tokens, everyMs) {
      const body = completionRequest(tokens, everyMs);
      const clients = waiting.splice(0);
      await Promise.all(
        clients.map(async (res, i) => {
          const gone = new AbortController();
          res.once('close', () => gone.abort());
          let index = 0;
          await readEvents(
            `bare relay ${i}`,
            completionOptions(llm.baseURL),
            body,
            (_event, data) => {
              if (data === '[DONE]') return true;
              const delta = (JSON.parse(data) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content;
              if (delta) res.write(`event: token\ndata: ${JSON.stringify({ seq: 1, turn: 0, delta, index: index++ })}\n\n`);
              return false;
            },
            gone.signal,
          );
          if (index !== tokens) throw new Error(`bare relay ${i}: ${index} of ${tokens} tokens`);
        }),
      );
    },
    async close() {
      waiting.forEach((res) => res.destroy());
      waiting = [];
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface Phase extends ClientResult {
  side: Side;
  /** From the start of the LLM calls to the last token received (and, for the runtime, the last answer committed). */
  wallMs: number;
  /** This process's CPU time over `wallMs` (the relay's; ~nothing for `direct`). */
  relayCpuUs: number;
  llmCpuUs: number;
  /** This process's RSS as the phase started, and its peak over the phase (sampled every 20 ms). */
  startRssMb: number;
  peakRssMb: number;
}

async function main(): Promise<void> {
  const llm = await startStreamLlm();
  const clients = startClients();
  const store = await openSqliteStore(tempFile());
  // Every stream's call at once, as the direct clients make them: the LLM gate's default (16 in
  // flight) would run the runtime's streams a few at a time and compare something else.
  const runtime = await createRuntime({
    store,
    machines: [agentDefinition({ llm: createOpenAiClient({ baseURL: llm.baseURL }) })],
    llmLimits: { concurrency: STREAMS },
  });
  const shutdown = new AbortController();
  // Every open stream listens for the shutdown on this one signal (more than Node's default 10).
  setMaxListeners(4 * STREAMS, shutdown.signal);
  const server = await listen(runtime, shutdown.signal);
  const bare = await startBareRelay(llm);
  const relays = { runtime: { relay: runtimeRelay(runtime), port: (server.address() as AddressInfo).port }, bare: { relay: bare, port: bare.port } };
  let profiles = 0;

  /** One phase of one side: every client reads its stream of `tokens` tokens, one every `everyMs` (0: as fast as the LLM can). */
  const phase = async (side: Side, tokens: number, everyMs: number): Promise<Phase> => {
    const { cpuUs: llmBefore } = await llm.stats();
    const startRss = process.memoryUsage.rss();
    let peakRss = startRss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 20);
    let started = 0;
    let cpuBefore: NodeJS.CpuUsage | undefined;
    const start = () => {
      started = clock();
      cpuBefore = process.cpuUsage();
    };
    let result: ClientResult;
    let stopProfile: ((file: string) => Promise<void>) | undefined;
    if (side === 'direct') {
      start();
      result = await clients.run({ kind: 'direct', baseURL: llm.baseURL, streams: STREAMS, tokens, everyMs });
    } else {
      const { relay, port } = relays[side];
      const paths = await relay.open();
      if (PROFILE_DIR && side === 'runtime') stopProfile = await startProfile();
      let answered: Promise<void> | undefined;
      // A relay that fails leaves its clients waiting for tokens that will not come: fail the run instead.
      let relayFailed!: (err: unknown) => void;
      const failed = new Promise<never>((_, reject) => (relayFailed = reject));
      result = await Promise.race([
        clients.run({ kind: 'relayed', base: `http://127.0.0.1:${port}`, paths, tokens }, async () => {
          start();
          answered = relay.go(tokens, everyMs);
          answered.catch(relayFailed);
        }),
        failed,
      ]);
      await answered;
    }
    const wallMs = clock() - started;
    const cpu = process.cpuUsage(cpuBefore);
    clearInterval(sampler);
    await stopProfile?.(path.join(PROFILE_DIR ?? '.', `stream-${++profiles}-${everyMs ? `every-${everyMs}ms` : 'flood'}.cpuprofile`));
    const llmCpuUs = (await llm.stats()).cpuUs - llmBefore;
    return { ...result, side, wallMs, relayCpuUs: cpu.user + cpu.system, llmCpuUs, startRssMb: startRss / 2 ** 20, peakRssMb: peakRss / 2 ** 20 };
  };

  try {
    const sides: Side[] = ['direct', 'bare', 'runtime'];
    for (const side of sides) await phase(side, WARMUP_TOKENS, EVERY_MS); // JIT, sockets, the store
    const rounds: Record<Side, Phase>[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const bySide = {} as Record<Side, Phase>;
      for (const side of r % 2 ? [...sides].reverse() : sides) bySide[side] = await phase(side, TOKENS, EVERY_MS);
      rounds.push(bySide);
    }
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const heldBefore = runtime.tokens.heldChars;
    const flood = {} as Record<Side, Phase>;
    if (FLOOD_TOKENS) for (const side of sides) flood[side] = await phase(side, FLOOD_TOKENS, 0);
    global.gc?.();
    const heapGrowth = process.memoryUsage().heapUsed - heapBefore;
    const heldGrowth = runtime.tokens.heldChars - heldBefore;

    const perSec = (p: Phase) => p.tokens / ((p.lastAt - p.firstAt) / 1000);
    const pct = (us: number, ms: number) => round(us / 10 / ms, 1);
    const mid = (pick: (r: Record<Side, Phase>) => number, digits = 3) => round(median(rounds.map(pick)), digits);
    report({
      ...(ROUNDS
        ? {
            addedP50Ms: mid((r) => r.runtime.p50 - r.direct.p50),
            addedP99Ms: mid((r) => r.runtime.p99 - r.direct.p99),
          }
        : {}),
      ...(FLOOD_TOKENS ? { tokensPerSec: Math.round(perSec(flood.runtime)) } : {}),
      ...(ROUNDS
        ? {
            rssMb: round(Math.max(...rounds.map((r) => r.runtime.peakRssMb)), 1),
            rssBeforeMb: round(rounds[0]!.runtime.startRssMb, 1),
            // Each side's percentiles (medians over the rounds); the spread of the added p99 over the rounds.
            directP50Ms: mid((r) => r.direct.p50),
            directP99Ms: mid((r) => r.direct.p99),
            relayedP50Ms: mid((r) => r.runtime.p50),
            relayedP90Ms: mid((r) => r.runtime.p90),
            relayedP99Ms: mid((r) => r.runtime.p99),
            relayedMaxMs: mid((r) => r.runtime.max),
            addedP99MsMin: round(Math.min(...rounds.map((r) => r.runtime.p99 - r.direct.p99)), 3),
            addedP99MsMax: round(Math.max(...rounds.map((r) => r.runtime.p99 - r.direct.p99)), 3),
            directSteadyP99Ms: mid((r) => r.direct.steadyP99),
            relayedSteadyP99Ms: mid((r) => r.runtime.steadyP99),
            addedSteadyP99Ms: mid((r) => r.runtime.steadyP99 - r.direct.steadyP99),
            bareAddedP50Ms: mid((r) => r.bare.p50 - r.direct.p50),
            bareAddedP99Ms: mid((r) => r.bare.p99 - r.direct.p99),
            // This process's CPU per relayed token at the fixed rate (system time included), and its share of one core.
            cpuUsPerToken: mid((r) => r.runtime.relayCpuUs / r.runtime.tokens, 1),
            bareCpuUsPerToken: mid((r) => r.bare.relayCpuUs / r.bare.tokens, 1),
            relayCpuPct: mid((r) => r.runtime.relayCpuUs / 10 / r.runtime.wallMs, 1),
            bareRelayCpuPct: mid((r) => r.bare.relayCpuUs / 10 / r.bare.wallMs, 1),
            llmCpuPct: mid((r) => r.runtime.llmCpuUs / 10 / r.runtime.wallMs, 1),
            clientsCpuPct: mid((r) => r.runtime.cpuUs / 10 / r.runtime.wallMs, 1),
          }
        : {}),
      ...(FLOOD_TOKENS
        ? {
            // The flood, each side: tokens/s at the clients, CPU per token here, each process's share of one core.
            directTokensPerSec: Math.round(perSec(flood.direct)),
            bareTokensPerSec: Math.round(perSec(flood.bare)),
            floodCpuUsPerToken: round(flood.runtime.relayCpuUs / flood.runtime.tokens, 1),
            floodBareCpuUsPerToken: round(flood.bare.relayCpuUs / flood.bare.tokens, 1),
            floodRelayCpuPct: pct(flood.runtime.relayCpuUs, flood.runtime.wallMs),
            floodLlmCpuPct: pct(flood.runtime.llmCpuUs, flood.runtime.wallMs),
            floodClientsCpuPct: pct(flood.runtime.cpuUs, flood.runtime.wallMs),
            floodDirectLlmCpuPct: pct(flood.direct.llmCpuUs, flood.direct.wallMs),
            floodDirectClientsCpuPct: pct(flood.direct.cpuUs, flood.direct.wallMs),
            floodRelayedP50Ms: round(flood.runtime.p50, 1),
            floodRssMb: round(flood.runtime.peakRssMb, 1),
            // What the token streams keep (finished calls stay 60 s): characters, and heap grown per character kept.
            heldChars: runtime.tokens.heldChars,
            heapBytesPerHeldChar: round(heapGrowth / heldGrowth),
          }
        : {}),
      tokens: TOKENS,
      everyMs: EVERY_MS,
      rounds: ROUNDS,
      floodTokens: FLOOD_TOKENS,
    });
  } finally {
    shutdown.abort();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      if ('closeAllConnections' in server) server.closeAllConnections();
    });
    await bare.close();
    await runtime.close();
    await Promise.all([llm.close(), clients.close()]);
  }
}

async function listen(runtime: Runtime, shutdown: AbortSignal): Promise<ServerType> {
  const app = createServer({ runtime, shutdown });
  return new Promise<ServerType>((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(server));
    server.once('error', reject);
  });
}

/** Starts the V8 profiler on this process; the function returned stops it and writes the profile there. */
async function startProfile(): Promise<(file: string) => Promise<void>> {
  const session = new inspector.Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async (file) => {
    const { profile } = await session.post('Profiler.stop');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}

if (process.argv[2] === 'clients') await runClients();
else await main();
