// `npx durable-agents serve --config digest.config.ts`: the digest machine of docs/machines.md served
// beside the reference `agent`, and a code tool the agent may call only once a person approves it.
import { z } from 'zod';
import { defineConfig, tool } from '../../../src/index.js';
import { digestDefinition } from './digest-machine.js';

export default defineConfig(({ llm, logger }) => ({
  machines: [
    digestDefinition({
      llm, // the service's LLM, as its flags chose it
      // A stand-in for a mail: a re-run after a crash delivers the same key.
      deliver: async ({ topic, idempotencyKey }) => {
        logger.info({ topic, idempotencyKey }, 'digest delivered');
        return { messageId: idempotencyKey };
      },
    }),
  ],
  tools: [
    tool({
      name: 'refund',
      description: 'Refunds an order',
      parameters: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
      approval: true, // the agent waits in awaitingApproval until tool.approve or tool.reject
      execute: ({ orderId, amountCents }, { idempotencyKey }) => ({ refunded: amountCents, orderId, key: idempotencyKey }),
    }),
  ],
}));
