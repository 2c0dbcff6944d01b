import { StepError } from '../../core/errors.js';
import { isTransientStatus, parseRetryAfter } from '../../core/backoff.js';

export interface WebhookDelivery {
  url: string;
  idempotencyKey: string;
  body: unknown;
  timeoutMs: number;
}

/**
 * POSTs the effect with its Idempotency-Key. 2xx is success; timeouts, network errors, 408, 429
 * and 5xx are transient; any other status is permanent.
 */
export async function postWebhook(delivery: WebhookDelivery, signal: AbortSignal): Promise<number> {
  let response: Response;
  try {
    response = await fetch(delivery.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': delivery.idempotencyKey },
      body: JSON.stringify(delivery.body),
      signal: AbortSignal.any([signal, AbortSignal.timeout(delivery.timeoutMs)]),
    });
  } catch (err) {
    const timedOut = err instanceof Error && err.name === 'TimeoutError';
    throw new StepError('transient', timedOut ? 'webhook_timeout' : 'webhook_unreachable', `The webhook could not be delivered: ${(err as Error).message}`, { cause: err });
  }
  await response.body?.cancel();
  const status = response.status;
  if (status >= 200 && status < 300) return status;
  const transient = isTransientStatus(status);
  const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
  throw new StepError(transient ? 'transient' : 'permanent', 'webhook_rejected', `The webhook answered HTTP ${status}.`, {
    status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}
