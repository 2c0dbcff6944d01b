// What only a real server over real sockets shows (app.request() has no socket): a body over the
// limit answered before it is read must still reach a client that sends it whole without waiting,
// and a client that hangs up mid-body is not a server error, in the log or in /metrics.
import { serve } from '@hono/node-server';
import net from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { testApp, type TestApp } from './harness.js';

let t: TestApp | undefined;
let server: Server | undefined;

afterEach(async () => {
  const s = server;
  server = undefined;
  if (s) {
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    (s as unknown as { closeAllConnections(): void }).closeAllConnections();
    await closed;
  }
  await t?.close();
  t = undefined;
});

/** The app on 127.0.0.1, as `durable-agents serve` runs it (@hono/node-server); its port. */
async function listen(options: Parameters<typeof testApp>[0] = {}): Promise<number> {
  t = await testApp(options);
  const app = t.app;
  server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s as unknown as Server));
  });
  return (server.address() as AddressInfo).port;
}

/** What came back on a raw socket: the status line's code (undefined: no HTTP answer), the body, and how the socket failed. */
interface RawAnswer {
  status: number | undefined;
  body: string;
  error?: string;
}

/**
 * A client that sends its whole request before it reads anything (as a simple uploader does): the
 * head, then the body in 64 KiB chunks `pauseMs` apart (a body that takes a while to arrive, as
 * under load), then reads what came back until the server closes or a second passes.
 */
function uploadThenRead(port: number, head: string, body: Buffer, pauseMs: number): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.pause();
    const chunks: Buffer[] = [];
    let error: string | undefined;
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
      resolve({ status: status === undefined ? undefined : Number(status), body: split < 0 ? '' : text.slice(split + 4), ...(error ? { error } : {}) });
    });
    socket.on('connect', () => {
      void (async () => {
        socket.write(head);
        for (let at = 0; at < body.length && !socket.destroyed; at += 64 * 1024) {
          socket.write(body.subarray(at, at + 64 * 1024));
          await sleep(pauseMs);
        }
        socket.resume();
        setTimeout(() => socket.destroy(), 1_000);
      })();
    });
  });
}

/** Sends the head and `part` of a body it declares longer (or chunked), then closes the socket: a client hanging up mid-body. */
function hangUpMidBody(port: number, head: string, part: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(head + part);
      // Long enough for the server to be reading the body when the socket goes.
      setTimeout(() => socket.destroy(), 100);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve());
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function postHead(path: string, length: number | 'chunked'): string {
  const framing = length === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`;
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`;
}

/** `durable_agents_http_requests_total` from /metrics: `status → count`, summed over methods and routes. */
async function requestsByStatus(port: number): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^durable_agents_http_requests_total\{[^}]*status="(\d+)"[^}]*\} (\d+)/gm)) {
    counts[match[1]!] = (counts[match[1]!] ?? 0) + Number(match[2]);
  }
  return counts;
}

describe('a real server over real sockets', () => {
  it('answers each of 20 concurrent 2 MiB bodies, sent whole before reading, with its 413, also when they take a while to arrive', async () => {
    const port = await listen();
    const body = Buffer.from(JSON.stringify({ type: 'task.add', task: 'x'.repeat(2 * 1024 * 1024) }));
    // 32 chunks 40 ms apart: over a second per body, longer than @hono/node-server drains an unread body.
    const answers = await Promise.all(Array.from({ length: 20 }, () => uploadThenRead(port, postHead('/agents/nobody/events', body.length), body, 40)));
    for (const answer of answers) {
      expect(answer, JSON.stringify({ ...answer, body: answer.body.slice(0, 200) })).toMatchObject({ status: 413 });
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'payload_too_large', message: expect.stringMatching(/limit/) } });
    }
  });

  it('answers 2 MiB chunked bodies (no length: found over the limit as they stream), sent whole before reading, with their 413', async () => {
    const port = await listen();
    const json = Buffer.from(JSON.stringify({ type: 'task.add', task: 'x'.repeat(2 * 1024 * 1024) }));
    // The same bytes in chunked framing: each 64 KiB piece prefixed with its size, then the last chunk.
    const framed: Buffer[] = [];
    for (let at = 0; at < json.length; at += 64 * 1024) {
      const piece = json.subarray(at, at + 64 * 1024);
      framed.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
    }
    framed.push(Buffer.from('0\r\n\r\n'));
    const answers = await Promise.all(Array.from({ length: 10 }, () => uploadThenRead(port, postHead('/agents/nobody/events', 'chunked'), Buffer.concat(framed), 40)));
    for (const answer of answers) {
      expect(answer, JSON.stringify({ ...answer, body: answer.body.slice(0, 200) })).toMatchObject({ status: 413 });
      expect(answer.body).toContain('payload_too_large');
    }
    // A chunked body within the limit is read whole and taken.
    const small = Buffer.from(JSON.stringify({ machine: 'agent', id: 'chunked-ok', input: { tasks: ['x'] } }));
    const taken = await uploadThenRead(port, postHead('/agents', 'chunked'), Buffer.concat([Buffer.from(`${small.length.toString(16)}\r\n`), small, Buffer.from('\r\n0\r\n\r\n')]), 0);
    expect(taken.status, taken.body).toBe(201);
    expect(JSON.parse(taken.body)).toMatchObject({ id: 'chunked-ok' });
  });

  it('counts and logs a client that hangs up mid-body as what it is, not as a server error, and stores nothing', async () => {
    const port = await listen();
    await hangUpMidBody(port, postHead('/agents', 1_000), '{"machine":"agent","id":"half');
    await hangUpMidBody(port, postHead('/agents/half/events', 1_000), '{"type":"task.add","task":"cut');
    await hangUpMidBody(port, postHead('/agents', 'chunked'), '20\r\n{"machine":"agent","id":"chunked');
    const counts = await vi.waitFor(async () => {
      const seen = await requestsByStatus(port);
      if ((seen['499'] ?? 0) < 3) throw new Error(`not all counted yet: ${JSON.stringify(seen)}`);
      return seen;
    });
    expect(Object.keys(counts).filter((status) => Number(status) >= 500)).toEqual([]);
    expect(counts['499']).toBe(3);
    const logs = t!.logs;
    expect(logs.filter((line) => (line.level as number) >= 50)).toEqual([]);
    expect(logs.filter((line) => line.msg === 'request' && line.status === 499)).toHaveLength(3);
    expect((await t!.store.listAgents({ limit: 10 })).items).toEqual([]);
  });
});
