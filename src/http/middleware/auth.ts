import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import { unauthorized } from '../errors.js';

const PUBLIC_PATHS = ['/healthz', '/readyz'];

export interface BearerAuthOptions {
  /** Also take the token from this cookie when no Authorization header is sent (the dashboard's login sets it). */
  cookie?: string;
  /** Paths open without a token besides /healthz and /readyz (the login page). */
  publicPaths?: readonly string[];
  /** A browser asking for a page (GET, `Accept: text/html`) without a valid token is sent here, with `?next=`. */
  loginPath?: string;
}

/**
 * `Authorization: Bearer <token>` on every route but /healthz, /readyz and `publicPaths` (or, for a browser,
 * the token in the login cookie). Both sides are hashed first so the comparison takes the same time whatever the
 * length or content of what was sent.
 */
export function bearerAuth(token: string, options: BearerAuthOptions = {}): MiddlewareHandler {
  const matches = tokenChecker(token);
  const publicPaths = new Set([...PUBLIC_PATHS, ...(options.publicPaths ?? [])]);
  return async function auth(c, next) {
    if (publicPaths.has(c.req.path)) return next();
    const header = c.req.header('authorization');
    const cookie = header === undefined && options.cookie ? getCookie(c, options.cookie) : undefined;
    let failure: string | undefined;
    if (header !== undefined) {
      const match = /^Bearer[ \t]+(.+)$/i.exec(header);
      if (!match) failure = 'This server needs an "Authorization: Bearer <token>" header.';
      else if (!matches(match[1]!.trim())) failure = 'The bearer token is not valid.';
    } else if (cookie !== undefined) {
      if (!matches(cookie)) failure = 'The login cookie is not valid any more; log in again.';
    } else failure = 'This server needs an "Authorization: Bearer <token>" header.';
    if (failure === undefined) return next();
    if (options.loginPath && c.req.method === 'GET' && (c.req.header('accept') ?? '').includes('text/html')) {
      return c.redirect(`${options.loginPath}?next=${encodeURIComponent(c.req.path + new URL(c.req.url).search)}`, 302);
    }
    throw unauthorized(failure);
  };
}

/** A constant-time check of a candidate against the configured token. */
export function tokenChecker(token: string): (candidate: string) => boolean {
  const expected = sha256(token);
  return (candidate) => timingSafeEqual(sha256(candidate), expected);
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
