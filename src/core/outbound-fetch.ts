// A JSON POST to a URL an API caller chose (a webhook, an HTTP tool), on node:http rather than
// fetch because only node:http lets us see the address before connecting: every address the host
// resolves to is checked against the policy in the socket's `lookup`, so a name that passed at spawn
// and resolves to a refused address now (DNS rebinding) is refused before a packet goes out.
//
// Connections are kept alive and reused. That does not weaken the check: a pooled socket stays
// connected to the address that was checked when it connected, so reusing it never reaches a new
// address, and every new connection still goes through the checked lookup. Node's Agent keys its
// sockets by host and port only, so each (policy, resolver) pair has agents of its own: a socket
// checked under one policy or resolver never carries a request under another.
import { lookup as dnsLookup } from 'node:dns/promises';
import { Agent as HttpAgent, request as httpRequest, type AgentOptions, type IncomingMessage, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { OutboundNotAllowedError, StepError } from './errors.js';
import { parseOutboundPolicy, type OutboundPolicy } from './outbound.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Every address of a host name, as `dns.lookup(host, { all: true })` gives them. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface PostJsonOptions {
  /** Names the step in error codes and messages: `webhook` → `webhook_timeout`, `webhook_unreachable`. */
  step: string;
  body: unknown;
  /** Sent besides `content-type: application/json`. */
  headers?: Record<string, string>;
  /** Bounds the whole exchange: connecting, the answer's headers and its body. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Default: any host but link-local and cloud-metadata addresses. */
  policy?: OutboundPolicy;
  /** Default: the system's resolver (`dns.lookup`, as node:http itself uses). */
  resolve?: Resolver;
  /** The most of the answer's body read into `text` (default 1 MiB); 0: the body is discarded unread. */
  maxResponseBytes?: number;
}

export interface JsonPostResponse {
  status: number;
  /** Lower-case names; a repeated header's values joined by ", ". */
  headers: Record<string, string>;
  contentType: string | undefined;
  /** The body as UTF-8, at most `maxResponseBytes` of it ('' when 0). */
  text: string;
  /** The body was longer than `maxResponseBytes` (never true when 0: the body is not read). */
  truncated: boolean;
}

const DEFAULT_POLICY = parseOutboundPolicy(undefined);
const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

/**
 * Bounds of each pool. 64 sockets per host: a burst of tool calls to one host (hundreds of agents,
 * several calls each) would otherwise open a connection per call, as many file descriptors and as
 * much load on that host; calls past it wait for a socket, and that wait counts against their
 * `timeoutMs`. 16 idle per host: what a burst leaves behind is closed instead of kept.
 */
const POOL_OPTIONS: AgentOptions = {
  keepAlive: true,
  // The idle socket used last goes first, so after a burst the others go unused and time out.
  scheduling: 'lifo',
  // Idle sockets are closed by us after 4 s (node's keepSocketAlive also unrefs them, so they never
  // keep the process alive): node's http server, like many others, closes them after 5 s, and a
  // request sent on a socket the server is closing fails. A `Keep-Alive: timeout=N` answer shortens
  // it to N - 1 s. On a socket in use this timeout only emits 'timeout', which nothing here reads:
  // the exchange's bound is `timeoutMs`.
  timeout: 4_000,
  maxSockets: 64,
  maxFreeSockets: 16,
};

interface Pool {
  lookup: LookupFunction;
  http?: HttpAgent;
  https?: HttpsAgent;
}

// Weak keys: a policy or resolver no longer used takes its pool with it (its idle sockets close by timeout).
const pools = new WeakMap<OutboundPolicy, WeakMap<Resolver, Pool>>();

function poolFor(policy: OutboundPolicy, resolve: Resolver): Pool {
  let byResolver = pools.get(policy);
  if (!byResolver) pools.set(policy, (byResolver = new WeakMap()));
  let pool = byResolver.get(resolve);
  if (!pool) byResolver.set(resolve, (pool = { lookup: checkedLookup(policy, resolve) }));
  return pool;
}

function agentFor(pool: Pool, protocol: string): HttpAgent {
  if (protocol === 'https:') return (pool.https ??= new HttpsAgent({ ...POOL_OPTIONS, lookup: pool.lookup }));
  return (pool.http ??= new HttpAgent({ ...POOL_OPTIONS, lookup: pool.lookup }));
}

/** A request on a reused socket failed before any answer: most likely the server had closed it while idle. */
class StaleSocketError extends Error {}

const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

/**
 * POSTs `body` as JSON and returns the answer whatever its status (classifying statuses is the
 * caller's: a webhook and a tool read a 4xx differently). Throws a StepError: permanent
 * `outbound_not_allowed` when the policy refuses the URL or an address its host resolves to;
 * transient `<step>_timeout` past `timeoutMs`, `<step>_unreachable` on a network error or when
 * `signal` aborts. Redirects are not followed: their target was never checked. Sockets are kept
 * and reused per (policy, resolver); a request that fails on a reused socket before any answer is
 * sent once more, on a new connection.
 */
export async function postJson(url: string, options: PostJsonOptions): Promise<JsonPostResponse> {
  const { step, policy = DEFAULT_POLICY, resolve = systemResolver } = options;
  let target: URL;
  try {
    target = policy.checkUrl(url);
  } catch (err) {
    throw refusal(err);
  }
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const pool = poolFor(policy, resolve);
  try {
    return await exchange(target, options, signal, pool.lookup, agentFor(pool, target.protocol)).catch((err: unknown) => {
      if (!(err instanceof StaleSocketError)) throw err;
      // Sent once more, on a connection of its own (the pool may hold more sockets the server
      // closed). The request may have reached a server that then failed, so this is a replay; both
      // callers send an idempotency key, and a transient error would be retried with it anyway.
      return exchange(target, options, signal, pool.lookup, false);
    });
  } catch (err) {
    if (err instanceof OutboundNotAllowedError) throw refusal(err);
    const timedOut = timeout.aborted && !options.signal?.aborted;
    const reason = timedOut ? `no answer within ${options.timeoutMs} ms` : errorText(err);
    throw new StepError('transient', `${step}_${timedOut ? 'timeout' : 'unreachable'}`, `The ${step} could not be delivered: ${reason}.`, { cause: err });
  }
}

function exchange(target: URL, options: PostJsonOptions, signal: AbortSignal, lookup: LookupFunction, agent: HttpAgent | false): Promise<JsonPostResponse> {
  const payload = Buffer.from(JSON.stringify(options.body) ?? 'null'); // undefined has no JSON: send null
  const requestOptions: RequestOptions = {
    method: 'POST',
    headers: { ...options.headers, 'content-type': 'application/json', 'content-length': payload.length },
    signal,
    // The agent's own lookup is this one; without an agent, node's throwaway one takes it from here.
    lookup,
    agent,
  };
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = send(target, requestOptions, (res) => {
      answered = true;
      readAnswer(res, options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES).then(resolve, reject);
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      const stale = req.reusedSocket && !answered && !signal.aborted && STALE_SOCKET_CODES.has(err.code ?? '');
      reject(stale ? new StaleSocketError(err.message, { cause: err }) : err);
    });
    req.end(payload);
  });
}

async function readAnswer(res: IncomingMessage, maxBytes: number): Promise<JsonPostResponse> {
  const headers = Object.fromEntries(
    Object.entries(res.headers).flatMap(([name, value]) => (value === undefined ? [] : [[name, Array.isArray(value) ? value.join(', ') : value]])),
  );
  const answer = { status: res.statusCode ?? 0, headers, contentType: headers['content-type'] };
  // Destroying an answer not read to its end destroys its socket too: the unread rest would
  // otherwise be read as the start of the next answer on it.
  if (maxBytes === 0) {
    res.destroy();
    return { ...answer, text: '', truncated: false };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > maxBytes) {
      truncated = true;
      break; // leaving the loop destroys the response: the rest is never read
    }
  }
  return { ...answer, text: Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8'), truncated };
}

/**
 * The socket's name lookup: resolves with `resolve`, refuses the connection when any address is
 * refused (connecting to "the others" would let a name that mixes a good address with a refused
 * one choose for us), else answers as dns.lookup does (node asks for `all` when it races families).
 */
function checkedLookup(policy: OutboundPolicy, resolve: Resolver): LookupFunction {
  return (hostname, options, callback) => {
    checkedAddresses(policy, resolve, hostname, options.family).then(
      (addresses) => (options.all ? callback(null, addresses) : callback(null, addresses[0]!.address, addresses[0]!.family)),
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}

async function checkedAddresses(policy: OutboundPolicy, resolve: Resolver, hostname: string, family: unknown): Promise<ResolvedAddress[]> {
  const found = await resolve(hostname);
  const wanted = family === 4 || family === 6 ? found.filter((a) => a.family === family) : found;
  for (const { address } of wanted) policy.checkAddress(hostname, address);
  if (wanted.length === 0) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
  return wanted;
}

function refusal(err: unknown): unknown {
  if (!(err instanceof OutboundNotAllowedError)) return err;
  return new StepError('permanent', 'outbound_not_allowed', err.message, { cause: err });
}

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // Node's connection races (several addresses) fail with an AggregateError whose message is empty.
  const code = (err as NodeJS.ErrnoException).code;
  const message = err.message.replace(/\.$/, '');
  if (!code || message.includes(code)) return message || err.name;
  return message ? `${message} (${code})` : code;
}
