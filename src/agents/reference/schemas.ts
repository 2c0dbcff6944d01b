import { z } from 'zod';
import { TOOL_NAME } from './tools.js';
import { MCP_SERVER_NAME } from '../../mcp/types.js';

const positiveInt = z.number().int().positive();

const httpToolSchema = z
  .object({
    name: z.string().regex(TOOL_NAME, 'a tool name is 1–64 characters from A-Z a-z 0-9 _ -'),
    description: z.string().max(10_000).optional(),
    parameters: z
      .record(z.string(), z.unknown())
      .refine((schema) => schema.type === undefined || schema.type === 'object', 'parameters must be a JSON Schema of type "object"')
      .optional(),
    url: z.url({ protocol: /^https?$/ }),
    approval: z.boolean().optional(),
    /** Calls to this URL running at once in the process, at most, for every agent declaring it (core/tool-limits.ts). */
    concurrency: positiveInt.max(10_000).optional(),
  })
  .strict();

/** A tool that is another agent (contract: "Agents as tools"): its parameters are always `{"task": string}`. */
const agentToolSchema = z
  .object({
    name: z.string().regex(TOOL_NAME, 'a tool name is 1–64 characters from A-Z a-z 0-9 _ -'),
    description: z.string().max(10_000).optional(),
    agent: z
      .object({
        machine: z.string().min(1).max(200),
        input: z.record(z.string(), z.unknown()).optional(),
        timeoutMs: z.number().int().positive().max(7 * 24 * 3_600_000).optional(),
      })
      .strict(),
    approval: z.boolean().optional(),
  })
  .strict();

/** An agent's budget (input `budget`, event `budget.raise`): the limits on what its LLM calls spend over its life. */
const budgetLimits = z
  .object({
    maxTotalTokens: positiveInt.max(Number.MAX_SAFE_INTEGER).optional(),
    maxCostUsd: z.number().positive().max(1e9).optional(),
  })
  .strict();

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
    tools: z
      .array(z.union([httpToolSchema, agentToolSchema]))
      .max(128)
      .refine((tools) => new Set(tools.map((t) => t.name)).size === tools.length, 'tool names must be unique')
      .optional(),
    maxTurns: positiveInt.max(100).optional(),
    memory: z.enum(['task', 'conversation']).optional(),
    finishAfterTasks: z.boolean().optional(),
    mcp: z
      .array(z.string().regex(MCP_SERVER_NAME, 'an MCP server name is 1–32 characters from A-Z a-z 0-9 _ -, without "__"'))
      .max(64)
      .refine((servers) => new Set(servers).size === servers.length, 'MCP server names must be unique')
      .optional(),
    budget: budgetLimits.refine((b) => b.maxTotalTokens !== undefined || b.maxCostUsd !== undefined, 'a budget needs maxTotalTokens or maxCostUsd').optional(),
  })
  .strict();

export const agentEventSchemas = {
  'task.add': z.object({ type: z.literal('task.add'), task: z.string().min(1).max(100_000) }).strict(),
  retry: z.object({ type: z.literal('retry') }).strict(),
  'task.skip': z.object({ type: z.literal('task.skip') }).strict(),
  finish: z.object({ type: z.literal('finish') }).strict(),
  'tool.approve': z.object({ type: z.literal('tool.approve'), callId: z.string().min(1).max(200) }).strict(),
  'tool.reject': z.object({ type: z.literal('tool.reject'), callId: z.string().min(1).max(200), reason: z.string().max(10_000).optional() }).strict(),
  'budget.raise': budgetLimits
    .extend({ type: z.literal('budget.raise') })
    .strict()
    .refine((e) => e.maxTotalTokens !== undefined || e.maxCostUsd !== undefined, 'budget.raise needs maxTotalTokens or maxCostUsd'),
};
