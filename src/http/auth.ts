import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { unauthorized } from './errors.js';

const PUBLIC_PATHS = new Set(['/healthz']);

/**
 * `Authorization: Bearer <token>` on every route but /healthz. Both sides are hashed first so the
 * comparison takes the same time whatever the length or content of what was sent.
 */
export function bearerAuth(token: string): MiddlewareHandler {
  const expected = sha256(token);
  return async function auth(c, next) {
    if (PUBLIC_PATHS.has(c.req.path)) return next();
    const header = c.req.header('authorization');
    const match = header === undefined ? null : /^Bearer[ \t]+(.+)$/i.exec(header);
    if (!match) throw unauthorized('This server needs an "Authorization: Bearer <token>" header.');
    if (!timingSafeEqual(sha256(match[1]!.trim()), expected)) throw unauthorized('The bearer token is not valid.');
    await next();
  };
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
