/**
 * The shapes of the HTTP API, as zod schemas. They validate requests and, through
 * @hono/zod-openapi, they are also the OpenAPI document: one source of truth.
 */
import { z } from '@hono/zod-openapi';
import { AGENT_STATUSES } from '../store/store.js';
import { ID_PATTERN } from '../runtime/ids.js';

/** Deeper JSON than this is refused before parsing: nothing legitimate nests 100 levels. */
export const MAX_JSON_DEPTH = 100;

export const DEFAULT_PAGE_SIZE = 100;

export const IdSchema = z.string().regex(ID_PATTERN).openapi({
  description: 'An agent id: 1–128 characters from A-Z a-z 0-9 . _ - :',
  example: 'agent-1',
});

/** A decimal integer in a query or path parameter; "0x10", "1e2" and " 7" are refused. */
const intParam = (min: number, max: number, message: string) =>
  z
    .string()
    .regex(/^\d{1,15}$/, { error: message })
    .transform(Number)
    .pipe(z.number().int().min(min, { error: message }).max(max, { error: message }))
    .openapi({ type: 'integer', minimum: min, maximum: max });

const Timestamp = z.string().openapi({ description: 'ISO 8601 UTC with milliseconds', example: '2026-11-30T05:41:07.123Z' });

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: 'not_found' }),
      message: z.string().openapi({ example: 'No agent with id "agent-1".' }),
    }),
  })
  .openapi('Error');

export const HealthSchema = z.object({ ok: z.literal(true) }).openapi('Health');

export const AgentStatusSchema = z.enum(AGENT_STATUSES).openapi('AgentStatus');

export const AgentViewSchema = z
  .object({
    id: z.string(),
    machine: z.string(),
    status: AgentStatusSchema,
    state: z.unknown().openapi({ description: 'The XState state value, e.g. "idle" or {"callingLLM":"requesting"}' }),
    context: z.unknown().openapi({ description: "The machine's context at its last committed checkpoint" }),
    progress: z.number().int(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('Agent');

export const AgentPageSchema = z
  .object({ items: z.array(AgentViewSchema), nextCursor: z.string().nullable() })
  .openapi('AgentPage');

export const MachineSummarySchema = z
  .object({
    name: z.string(),
    version: z.string(),
    states: z.array(z.string()).openapi({ description: 'Top-level state names' }),
    events: z.array(z.string()).openapi({ description: 'Event types a caller may send' }),
  })
  .openapi('MachineSummary');

export const MachineListSchema = z.object({ items: z.array(MachineSummarySchema) }).openapi('MachineList');

export const MachineDetailSchema = z
  .object({
    name: z.string(),
    version: z.string(),
    definition: z.record(z.string(), z.unknown()).openapi({ description: '`machine.toJSON()`: importable into Stately tools' }),
  })
  .openapi('Machine');

export const StatelyCodeSchema = z.string().openapi('StatelyCode', {
  description:
    "`createMachine({...})` with the machine's config as JSON, for Stately's editor (Import from code). " +
    'Actions, guards and actors appear by name; data mappers (context factory, invoke input, params) are left out; secrets are redacted.',
  example: 'createMachine({\n  "id": "agent",\n  "initial": "idle",\n  "states": { "idle": {} }\n})\n',
});

export const MachineParamsSchema = z.object({
  name: z.string().openapi({ param: { name: 'name', in: 'path' }, example: 'agent' }),
});

export const AgentParamsSchema = z.object({
  id: IdSchema.openapi({ param: { name: 'id', in: 'path' } }),
});

export const CheckpointParamsSchema = z.object({
  id: IdSchema.openapi({ param: { name: 'id', in: 'path' } }),
  seq: intParam(1, Number.MAX_SAFE_INTEGER, 'a checkpoint seq is a positive integer').openapi({
    param: { name: 'seq', in: 'path' },
    example: 1,
  }),
});

export const SpawnBodySchema = z
  .strictObject({
    machine: z.string().min(1).max(128).openapi({ example: 'agent' }),
    id: IdSchema.optional(),
    input: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({ example: { tasks: ['Summarize the design card.'], webhook: 'http://127.0.0.1:9000/hook' } }),
  })
  .openapi('SpawnRequest');

export const ListQuerySchema = z.object({
  machine: z.string().min(1).max(128).optional().openapi({ param: { name: 'machine', in: 'query' } }),
  status: AgentStatusSchema.optional().openapi({ param: { name: 'status', in: 'query' } }),
  limit: intParam(1, 1000, 'an integer from 1 to 1000')
    .optional()
    .openapi({ param: { name: 'limit', in: 'query' }, description: `Page size, 1–1000 (default ${DEFAULT_PAGE_SIZE})` }),
  cursor: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .openapi({ param: { name: 'cursor', in: 'query' }, description: '`nextCursor` of the previous page' }),
});

export const EventBodySchema = z
  .looseObject({
    type: z.string().min(1).max(200).openapi({ example: 'task.add' }),
  })
  .openapi('Event', {
    description: 'An event of the agent\'s machine: `type` plus its payload, e.g. {"type":"task.add","task":"…"}',
    example: { type: 'task.add', task: 'Extract the entities.' },
  });

export const EventHeadersSchema = z.object({
  // Matched case-insensitively by the header validator.
  'Idempotency-Key': z
    .string()
    .min(1)
    .max(255)
    .optional()
    .openapi({ description: 'The same key again returns the same 202 {"seq"} and adds no event' }),
});

export const AcceptedSchema = z.object({ seq: z.number().int() }).openapi('Accepted');

export const CheckpointSummarySchema = z
  .object({
    seq: z.number().int(),
    state: z.unknown(),
    progress: z.number().int(),
    createdAt: Timestamp,
    status: z.string().openapi({ description: 'The agent status this checkpoint recorded' }),
    eventType: z.string().openapi({ description: 'The event that caused the transition (xstate.init for the first)' }),
  })
  .openapi('CheckpointSummary');

export const CheckpointListSchema = z.object({ items: z.array(CheckpointSummarySchema) }).openapi('CheckpointList');

export const CheckpointSchema = z
  .object({
    agentId: z.string(),
    seq: z.number().int(),
    state: z.unknown(),
    status: z.string(),
    progress: z.number().int(),
    eventType: z.string(),
    machineVersion: z.string(),
    createdAt: Timestamp,
    snapshot: z
      .record(z.string(), z.unknown())
      .openapi({ description: 'The persisted XState snapshot, whole (`actor.getPersistedSnapshot()` as stored)' }),
  })
  .openapi('Checkpoint');

export const ForkBodySchema = z
  .strictObject({
    checkpoint: z.number().int().min(1).openapi({ description: 'The seq of the checkpoint to restore', example: 3 }),
    id: IdSchema.optional().openapi({ description: 'The new agent id (generated when missing)' }),
  })
  .openapi('ForkRequest');

export const ActionSchema = z
  .object({
    seq: z.number().int().openapi({ description: 'The checkpoint whose transition recorded this action' }),
    action: z.string(),
    payload: z.unknown(),
    result: z.unknown(),
    createdAt: Timestamp,
  })
  .openapi('Action');

export const ActionListSchema = z.object({ items: z.array(ActionSchema) }).openapi('ActionList');
