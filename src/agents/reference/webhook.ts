import { isTransientStatus, parseRetryAfter } from '../../core/backoff.js';
import { StepError } from '../../core/errors.js';
import type { OutboundPolicy } from '../../core/outbound.js';
import { postJson } from '../../core/outbound-fetch.js';

export interface WebhookDelivery {
  url: string;
  idempotencyKey: string;
  body: unknown;
  timeoutMs: number;
}

/**
 * POSTs the effect with its Idempotency-Key. 2xx is success; timeouts, network errors, 408, 429
 * and 5xx are transient; any other status is permanent, and so is an address `policy` refuses
 * (`outbound_not_allowed`; default policy: any host but link-local and cloud-metadata addresses).
 */
export async function postWebhook(delivery: WebhookDelivery, signal: AbortSignal, policy?: OutboundPolicy): Promise<number> {
  const { status, headers } = await postJson(delivery.url, {
    step: 'webhook',
    body: delivery.body,
    headers: { 'idempotency-key': delivery.idempotencyKey },
    timeoutMs: delivery.timeoutMs,
    signal,
    // The webhook's answer is not read: only its status counts.
    maxResponseBytes: 0,
    policy,
  });
  if (status >= 200 && status < 300) return status;
  const transient = isTransientStatus(status);
  const retryAfterMs = parseRetryAfter(headers['retry-after']);
  throw new StepError(transient ? 'transient' : 'permanent', 'webhook_rejected', `The webhook answered HTTP ${status}.`, {
    status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}
