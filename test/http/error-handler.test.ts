// The one table from error codes to statuses, for the codes whose status is not the obvious one.
import { Hono } from 'hono';
import { describe, expect, test } from 'vitest';
import { OutboundNotAllowedError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';
import type { AppEnv } from '../../src/http/env.js';
import { createErrorHandler } from '../../src/http/middleware/error-handler.js';

describe('the error handler', () => {
  test('answers a URL the outbound policy refuses with 400 outbound_not_allowed and its sentence', async () => {
    const app = new Hono<AppEnv>();
    app.onError(createErrorHandler(silentLogger));
    app.post('/agents', () => {
      throw new OutboundNotAllowedError('169.254.169.254', 'it is in 169.254.0.0/16');
    });
    const res = await app.request('/agents', { method: 'POST' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: { code: 'outbound_not_allowed', message: 'Outbound requests to "169.254.169.254" are not allowed: it is in 169.254.0.0/16.' },
    });
  });
});
