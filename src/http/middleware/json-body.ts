import type { Context, MiddlewareHandler, Next } from 'hono';
import { InvalidInputError, truncate } from '../../core/errors.js';
import type { AppEnv } from '../env.js';
import { malformedJson, payloadTooLarge, unsupportedMediaType } from '../errors.js';
import { discardBody, DISCARD_MAX_BYTES, DISCARD_TIMEOUT_MS, incomingOf } from './node-request.js';

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** Deeper JSON than this is refused before parsing: nothing legitimate nests 100 levels. */
export const MAX_JSON_DEPTH = 100;

const JSON_MEDIA_TYPE = /^application\/json\s*(;|$)/i;

/**
 * The checks every JSON body goes through before a route's schema sees it, in this order:
 * `Content-Type: application/json` (415), size (413), nesting depth (400), syntax (400).
 * The parsed value is cached for the route's zod validator, which then checks it without re-reading.
 */
export function jsonBody({ maxBytes = DEFAULT_BODY_LIMIT, maxDepth = MAX_JSON_DEPTH } = {}): MiddlewareHandler<AppEnv>[] {
  return [
    async function requireJson(c, next) {
      const type = c.req.header('content-type');
      if (!type || !JSON_MEDIA_TYPE.test(type)) throw unsupportedMediaType(type);
      await next();
    },
    limitSize(maxBytes),
    async function parseJson(c, next) {
      const text = await c.req.text();
      if (text.trim() === '') throw malformedJson('the body is empty; send a JSON object.');
      // Checked on the text, before parsing: very deep values crash JSON.stringify and recursive code later.
      if (depthExceeds(text, maxDepth)) {
        throw new InvalidInputError(`The JSON body nests more than ${maxDepth} levels deep.`);
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (err) {
        throw malformedJson(`${truncate((err as Error).message, 200)}.`);
      }
      c.set('body', body);
      // The route's zod validator calls c.req.json(); with only the text cached, hono would rebuild
      // a web Response from it to parse it again (the costliest step of a small POST, measured).
      c.req.bodyCache.json = Promise.resolve(body);
      await next();
    },
  ];
}

/**
 * 413 for a body over the limit. With a Content-Length (the usual case) the header decides and the
 * body is left alone: touching `c.req.raw.body`, as hono's bodyLimit does first, makes
 * @hono/node-server build a web ReadableStream for every request, which measured 3–4× slower than its
 * direct read. Chunked bodies (no length) are counted as they stream (`limitStreamed`).
 * A body declared over the limit is read and dropped before the 413 goes out: answered early, a
 * client still sending would get EPIPE instead of the answer (node-request.ts, `discardBody`).
 */
function limitSize(maxBytes: number): MiddlewareHandler<AppEnv> {
  return async function limitBodySize(c, next) {
    const length = c.req.header('content-length');
    if (length === undefined || c.req.header('transfer-encoding') !== undefined) return limitStreamed(c, next, maxBytes);
    if (!/^\d+$/.test(length)) throw payloadTooLarge(maxBytes);
    if (Number(length) > maxBytes) {
      const whole = await discardBody(c, Number(length));
      throw payloadTooLarge(maxBytes, !whole && incomingOf(c) !== undefined);
    }
    await next();
  };
}

/**
 * A chunked body (no length to judge it by) counted as it streams. Once over the limit, the rest is
 * read and dropped before the 413 goes out, as for a declared length, and for the same reason; hono's
 * bodyLimit answers at once, and such a client got EPIPE instead (test/http/real-socket.test.ts).
 */
async function limitStreamed(c: Context<AppEnv>, next: Next, maxBytes: number): Promise<void> {
  const body = c.req.raw.body;
  if (!body) return next();
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) throw payloadTooLarge(maxBytes, !(await drained(reader, size)));
    chunks.push(value);
  }
  c.req.raw = new Request(c.req.raw, { body: Buffer.concat(chunks, size) });
  return next();
}

/** Reads `reader` to its end (true), or gives up past `DISCARD_MAX_BYTES` or `DISCARD_TIMEOUT_MS` (false). */
async function drained(reader: ReadableStreamDefaultReader<Uint8Array>, read: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const tooSlow = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), DISCARD_TIMEOUT_MS)));
  const toTheEnd = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return true;
      read += value.length;
      if (read > DISCARD_MAX_BYTES) return false;
    }
  })().catch(() => false); // the client went away: nobody to answer
  const whole = await Promise.race([toTheEnd, tooSlow]);
  clearTimeout(timer);
  if (!whole) void reader.cancel().catch(() => undefined);
  return whole;
}

/** Whether brackets outside strings nest deeper than `max`. Linear, no recursion. */
export function depthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c /* \ */) i++;
      else if (ch === 0x22 /* " */) inString = false;
    } else if (ch === 0x22) {
      inString = true;
    } else if (ch === 0x7b /* { */ || ch === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) {
      depth--;
    }
  }
  return false;
}
