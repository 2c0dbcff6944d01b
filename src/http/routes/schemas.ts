/**
 * The shapes more than one resource uses, as zod schemas. They validate requests and, through
 * @hono/zod-openapi, they are also the OpenAPI document: one source of truth. A shape only one
 * resource uses lives in that resource's module.
 */
import { z } from '@hono/zod-openapi';
import { AGENT_STATUSES } from '../../store/store.js';
import { ID_PATTERN } from '../../core/ids.js';

export const IdSchema = z.string().regex(ID_PATTERN).openapi({
  description: 'An agent id: 1–128 characters from A-Z a-z 0-9 . _ - :',
  example: 'agent-1',
});

/** A decimal integer in a query or path parameter; "0x10", "1e2" and " 7" are refused. */
export const intParam = (min: number, max: number, message: string) =>
  z
    .string()
    .regex(/^\d{1,15}$/, { error: message })
    .transform(Number)
    .pipe(z.number().int().min(min, { error: message }).max(max, { error: message }))
    .openapi({ type: 'integer', minimum: min, maximum: max });

export const Timestamp = z.string().openapi({ description: 'ISO 8601 UTC with milliseconds', example: '2026-11-30T05:41:07.123Z' });

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: 'not_found' }),
      message: z.string().openapi({ example: 'No agent with id "agent-1".' }),
      /** `store_unavailable` only: why the store takes no writes. */
      reason: z.enum(['disk_full', 'read_only', 'io_error', 'file_gone', 'database_unreachable']).optional(),
    }),
  })
  .openapi('Error');

export const AgentStatusSchema = z.enum(AGENT_STATUSES).openapi('AgentStatus');

export const AgentErrorSchema = z
  .object({
    code: z.enum(['version_unknown', 'snapshot_unreadable', 'restore_failed', 'machine_error']),
    message: z.string(),
  })
  .openapi('AgentError', { description: 'Why an agent is in `error` (docs/http-api.md, "The agent view")' });

/** What a list item and a whole view both have. */
const agentSummaryFields = {
  id: z.string(),
  machine: z.string(),
  status: AgentStatusSchema,
  state: z.unknown().openapi({ description: 'The XState state value, e.g. "idle" or {"callingLLM":"requesting"}' }),
  progress: z.number().int(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  parent: z.string().optional().openapi({ description: 'A child agent: the agent that spawned it (spawnAgent, or an agent tool)' }),
  error: AgentErrorSchema.optional().openapi({ description: 'Only when `status` is `error`: why' }),
};

const contextField = z.unknown().openapi({ description: "The machine's context at its last committed checkpoint" });

export const AgentViewSchema = z
  .object({
    ...agentSummaryFields,
    context: contextField,
    children: z.array(z.string()).optional().openapi({ description: 'GET /agents/{id} only: the agents this one spawned, oldest first' }),
  })
  .openapi('Agent');

/** An item of `GET /agents`: the view without its context, unless `include=context` asked for it. */
export const AgentListItemSchema = z
  .object({ ...agentSummaryFields, context: contextField.optional() })
  .openapi('AgentListItem', { description: 'An agent summary; with `include=context`, its whole view' });

/** `/agents/{id}/…`: the agent the route is about. */
export const AgentParamsSchema = z.object({
  id: IdSchema.openapi({ param: { name: 'id', in: 'path' } }),
});
