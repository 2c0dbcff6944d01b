// postWebhook against the webhook sink on 127.0.0.1: how statuses are classified, and the outbound
// policy's refusals (before anything is sent).
import { afterEach, describe, expect, test } from 'vitest';
import { StepError } from '../../../src/core/errors.js';
import { parseOutboundPolicy } from '../../../src/core/outbound.js';
import { postWebhook, type WebhookDelivery } from '../../../src/agents/reference/webhook.js';
import { startWebhookSink, type WebhookSink } from '../../support/webhook-sink.js';

let sink: WebhookSink | undefined;
afterEach(async () => {
  await sink?.close();
  sink = undefined;
});

const delivery = (url: string): WebhookDelivery => ({ url, idempotencyKey: 'a1:1', body: { agentId: 'a1', seq: 1 }, timeoutMs: 5_000 });
const never = new AbortController().signal;

async function refusal(promise: Promise<unknown>): Promise<StepError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StepError);
  return err as StepError;
}

describe('postWebhook', () => {
  test('delivers the body with its Idempotency-Key and returns the 2xx status', async () => {
    sink = await startWebhookSink();
    expect(await postWebhook(delivery(sink.url), never)).toBe(200);
    expect(sink.deliveries).toMatchObject([{ idempotencyKey: 'a1:1', body: { agentId: 'a1', seq: 1 } }]);
  });

  test('a 5xx is transient and a 4xx permanent, both webhook_rejected with the status', async () => {
    sink = await startWebhookSink();
    sink.enqueueStatuses(503, 404);
    expect(await refusal(postWebhook(delivery(sink.url), never))).toMatchObject({ kind: 'transient', code: 'webhook_rejected', status: 503 });
    expect(await refusal(postWebhook(delivery(sink.url), never))).toMatchObject({ kind: 'permanent', code: 'webhook_rejected', status: 404 });
  });

  test('without a policy, a link-local or metadata address is refused, permanently, and nothing is sent', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[fe80::1]/']) {
      expect(await refusal(postWebhook(delivery(url), never)), url).toMatchObject({ kind: 'permanent', code: 'outbound_not_allowed' });
    }
  });

  test('with a policy, only what it lists is reached', async () => {
    sink = await startWebhookSink();
    expect(await postWebhook(delivery(sink.url), never, parseOutboundPolicy('127.0.0.0/8'))).toBe(200);
    const err = await refusal(postWebhook(delivery(sink.url), never, parseOutboundPolicy('hooks.example.com')));
    expect(err).toMatchObject({ kind: 'permanent', code: 'outbound_not_allowed', message: expect.stringContaining('"127.0.0.1"') });
    expect(sink.requests).toBe(1);
  });
});
