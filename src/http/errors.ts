import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { AgentsError, truncate } from '../core/errors.js';

/**
 * Errors that only the HTTP edge can raise (a body, a header, a token). They join the one error
 * family so that `middleware/error-handler.ts` renders them like every other `{"error":{"code","message"}}`.
 */
export class HttpError extends AgentsError {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    /** Extra response headers, e.g. `WWW-Authenticate` on a 401. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const malformedJson = (detail: string) =>
  new HttpError(400, 'malformed_json', `The request body is not valid JSON: ${detail}`);

/** `closing`: the body could not all be read, so the connection is not kept for another request. */
export const payloadTooLarge = (maxBytes: number, closing = false) =>
  new HttpError(413, 'payload_too_large', `The request body is larger than the limit of ${maxBytes} bytes.`, closing ? { Connection: 'close' } : {});

export const unsupportedMediaType = (got: string | undefined) =>
  new HttpError(
    415,
    'unsupported_media_type',
    `Send the request body as JSON with "Content-Type: application/json" (got ${got ? JSON.stringify(truncate(got, 80)) : 'no Content-Type'}).`,
  );

export const unauthorized = (why: string) =>
  new HttpError(401, 'unauthorized', why, { 'WWW-Authenticate': 'Bearer realm="durable-agents"' });

export const invalidEventId = (id: string) =>
  new HttpError(400, 'invalid_event_id', `${JSON.stringify(truncate(id, 80))} is not an event id of this stream: resume with the id of an event it sent.`);

export const routeNotFound = (method: string, path: string) =>
  new HttpError(404, 'not_found', `There is no route ${method} ${truncate(path, 200)}.`);
