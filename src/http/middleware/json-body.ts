import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { InvalidInputError, truncate } from '../../core/errors.js';
import type { AppEnv } from '../env.js';
import { malformedJson, payloadTooLarge, unsupportedMediaType } from '../errors.js';
import { discardBody, incomingOf } from './node-request.js';

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
 * direct read. Chunked bodies (no length) are counted as they stream, by hono's bodyLimit.
 * A body declared over the limit is read and dropped before the 413 goes out: answered early, a
 * client still sending would get EPIPE instead of the answer (node-request.ts, `discardBody`).
 */
function limitSize(maxBytes: number): MiddlewareHandler<AppEnv> {
  const streamed = bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw payloadTooLarge(maxBytes);
    },
  });
  return async function limitBodySize(c, next) {
    const length = c.req.header('content-length');
    if (length === undefined || c.req.header('transfer-encoding') !== undefined) return streamed(c, next);
    if (!/^\d+$/.test(length)) throw payloadTooLarge(maxBytes);
    if (Number(length) > maxBytes) {
      const whole = await discardBody(c, Number(length));
      throw payloadTooLarge(maxBytes, !whole && incomingOf(c) !== undefined);
    }
    await next();
  };
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
