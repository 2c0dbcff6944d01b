/**
 * What only a request that came over a real Node socket (@hono/node-server's `c.env.incoming`) can
 * tell or do: whether its client hung up, and reading the rest of a body the server will not use.
 * Through `app.request()` (tests, other runtimes) there is no socket: nothing to tell, nothing to read.
 */
import { IncomingMessage } from 'node:http';
import type { Context } from 'hono';

/** A body over the limit is read and dropped up to this size before its 413 is sent (@hono/node-server drains as much). */
export const DISCARD_MAX_BYTES = 64 * 1024 * 1024;
/** …and for this long at most: past it the 413 goes out with `Connection: close`. */
export const DISCARD_TIMEOUT_MS = 30_000;

/** The Node request under the context, when it came over a socket. */
export function incomingOf(c: Context): IncomingMessage | undefined {
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  return incoming instanceof IncomingMessage ? incoming : undefined;
}

/**
 * Whether the client went away before its request was answered: its body was cut off (it closed
 * the socket mid-body) or the request was aborted. Not a server error: nobody is left to answer.
 */
export function clientWentAway(c: Context): boolean {
  const incoming = incomingOf(c);
  if (incoming) return incoming.readableAborted || (incoming.destroyed && !incoming.complete);
  return c.req.raw.signal?.aborted === true;
}

/**
 * Reads and drops the rest of the request's body, so that the answer sent next (a 413) reaches a
 * client that sends its whole body before it reads anything. Answered first, the body unread,
 * the server's socket closes under the client while it is still writing (@hono/node-server stops
 * draining after 500 ms, and a socket closed with unread data is reset): the client gets EPIPE or
 * ECONNRESET and never reads the answer. Resolves true once the whole body was read; false when
 * it was not (no Node request, declared over `DISCARD_MAX_BYTES`, too slow, the client went away):
 * the answer should then close the connection.
 */
export function discardBody(c: Context, declaredBytes: number): Promise<boolean> {
  const incoming = incomingOf(c);
  if (!incoming || declaredBytes > DISCARD_MAX_BYTES) return Promise.resolve(false);
  if (incoming.readableEnded) return Promise.resolve(true);
  if (incoming.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    let read = 0;
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (read > DISCARD_MAX_BYTES) done(false);
    };
    const onEnd = () => done(true);
    const onClose = () => done(incoming.readableEnded);
    const timer = setTimeout(() => done(false), DISCARD_TIMEOUT_MS);
    function done(whole: boolean) {
      clearTimeout(timer);
      incoming!.off('data', onData).off('end', onEnd).off('close', onClose).off('error', onClose);
      resolve(whole);
    }
    incoming.on('data', onData).once('end', onEnd).once('close', onClose).once('error', onClose);
    incoming.resume();
  });
}
