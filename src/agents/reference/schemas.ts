import { z } from 'zod';

const positiveInt = z.number().int().positive();

/** Spawn input of the `agent` machine (contract: "The reference machine"). */
export const agentInputSchema = z
  .object({
    tasks: z.array(z.string().min(1).max(100_000)).max(10_000).optional(),
    system: z.string().max(100_000).optional(),
    model: z.string().min(1).max(200).optional(),
    webhook: z.url({ protocol: /^https?$/ }).optional(),
    retry: z
      .object({
        maxAttempts: positiveInt.max(100).optional(),
        baseDelayMs: z.number().int().min(0).max(3_600_000).optional(),
        timeoutMs: positiveInt.max(3_600_000).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

export const agentEventSchemas = {
  'task.add': z.object({ type: z.literal('task.add'), task: z.string().min(1).max(100_000) }).strict(),
  retry: z.object({ type: z.literal('retry') }).strict(),
  'task.skip': z.object({ type: z.literal('task.skip') }).strict(),
  finish: z.object({ type: z.literal('finish') }).strict(),
};
