/** The route table of the contract, as OpenAPI route definitions (handlers live in server.ts). */
import { createRoute, z } from '@hono/zod-openapi';
import {
  AcceptedSchema,
  ActionListSchema,
  AgentPageSchema,
  AgentParamsSchema,
  AgentViewSchema,
  CheckpointListSchema,
  CheckpointParamsSchema,
  CheckpointSchema,
  ErrorSchema,
  EventBodySchema,
  EventHeadersSchema,
  ForkBodySchema,
  HealthSchema,
  ListQuerySchema,
  MachineDetailSchema,
  MachineListSchema,
  MachineParamsSchema,
  SpawnBodySchema,
  StatelyCodeSchema,
} from './schemas.js';

const ERROR_TEXT = {
  400: 'Malformed JSON, an invalid field or parameter (`malformed_json`, `invalid_input`, `invalid_id`)',
  401: 'Missing or wrong bearer token (`unauthorized`)',
  404: 'Unknown agent, machine, checkpoint or route (`not_found`)',
  409: 'Conflict with the stored state (`conflict`)',
  413: 'Body over the limit (`payload_too_large`)',
  415: 'Body not sent as application/json (`unsupported_media_type`)',
  422: 'Event not valid for the machine (`invalid_event`)',
} as const;

type ErrorStatus = keyof typeof ERROR_TEXT;

function errors<S extends ErrorStatus>(...statuses: S[]) {
  return Object.fromEntries(
    [401, ...statuses].map((s) => [s, { description: ERROR_TEXT[s as ErrorStatus], content: { 'application/json': { schema: ErrorSchema } } }]),
  ) as { [K in S | 401]: { description: string; content: { 'application/json': { schema: typeof ErrorSchema } } } };
}

const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

const BODY_ERRORS = [400, 413, 415] as const;

export const healthRoute = createRoute({
  method: 'get',
  path: '/healthz',
  tags: ['service'],
  summary: 'Liveness: the store is open and recovery has started',
  security: [],
  responses: { 200: json(HealthSchema, 'The service is up') },
});

export const listMachinesRoute = createRoute({
  method: 'get',
  path: '/machines',
  tags: ['machines'],
  summary: 'The registered machines with their top-level states and accepted events',
  responses: { 200: json(MachineListSchema, 'Every registered machine'), ...errors() },
});

export const getMachineRoute = createRoute({
  method: 'get',
  path: '/machines/{name}',
  tags: ['machines'],
  summary: "A machine's definition (`machine.toJSON()`), importable into Stately tools",
  request: { params: MachineParamsSchema },
  responses: { 200: json(MachineDetailSchema, 'The machine'), ...errors(404) },
});

export const getMachineStatelyRoute = createRoute({
  method: 'get',
  path: '/machines/{name}/stately',
  tags: ['machines'],
  summary: "The machine as code for Stately's editor: paste it into Import from code",
  request: { params: MachineParamsSchema },
  responses: {
    200: { description: '`createMachine({...})` as JavaScript text', content: { 'text/plain': { schema: StatelyCodeSchema } } },
    ...errors(404),
  },
});

export const spawnRoute = createRoute({
  method: 'post',
  path: '/agents',
  tags: ['agents'],
  summary: 'Spawn an agent (idempotent on `id`)',
  request: { body: jsonBody(SpawnBodySchema) },
  responses: {
    201: json(AgentViewSchema, 'A new agent, started'),
    200: json(AgentViewSchema, 'An agent with this id and machine already existed: that agent'),
    ...errors(...BODY_ERRORS, 404, 409),
  },
});

export const listAgentsRoute = createRoute({
  method: 'get',
  path: '/agents',
  tags: ['agents'],
  summary: 'List agents, oldest first, a page at a time',
  request: { query: ListQuerySchema },
  responses: { 200: json(AgentPageSchema, 'One page of agents'), ...errors(400) },
});

export const getAgentRoute = createRoute({
  method: 'get',
  path: '/agents/{id}',
  tags: ['agents'],
  summary: "An agent's view",
  request: { params: AgentParamsSchema },
  responses: { 200: json(AgentViewSchema, 'The agent'), ...errors(400, 404) },
});

export const sendEventRoute = createRoute({
  method: 'post',
  path: '/agents/{id}/events',
  tags: ['agents'],
  summary: "Commit an event to the agent's inbox; 202 only once it is durable",
  request: { params: AgentParamsSchema, headers: EventHeadersSchema, body: jsonBody(EventBodySchema) },
  responses: {
    202: json(AcceptedSchema, 'The event is committed; the agent processes its inbox in order'),
    ...errors(...BODY_ERRORS, 404, 409, 422),
  },
});

export const listCheckpointsRoute = createRoute({
  method: 'get',
  path: '/agents/{id}/checkpoints',
  tags: ['checkpoints'],
  summary: "The agent's checkpoints, oldest first",
  request: { params: AgentParamsSchema },
  responses: { 200: json(CheckpointListSchema, 'One item per committed transition'), ...errors(400, 404) },
});

export const getCheckpointRoute = createRoute({
  method: 'get',
  path: '/agents/{id}/checkpoints/{seq}',
  tags: ['checkpoints'],
  summary: 'One persisted snapshot, whole',
  request: { params: CheckpointParamsSchema },
  responses: { 200: json(CheckpointSchema, 'The checkpoint with its snapshot'), ...errors(400, 404) },
});

export const forkRoute = createRoute({
  method: 'post',
  path: '/agents/{id}/fork',
  tags: ['checkpoints'],
  summary: 'A new agent restored from one checkpoint of this one, started',
  request: { params: AgentParamsSchema, body: jsonBody(ForkBodySchema) },
  responses: { 201: json(AgentViewSchema, 'The new agent'), ...errors(...BODY_ERRORS, 404, 409) },
});

export const listActionsRoute = createRoute({
  method: 'get',
  path: '/agents/{id}/actions',
  tags: ['agents'],
  summary: 'The action log: every logged invoked call with its input and result',
  request: { params: AgentParamsSchema },
  responses: { 200: json(ActionListSchema, 'Oldest first'), ...errors(400, 404) },
});

export const streamRoute = createRoute({
  method: 'get',
  path: '/agents/{id}/stream',
  tags: ['agents'],
  summary: 'Server-Sent Events: a `snapshot` event with the agent view now and after each committed transition',
  description:
    'Each event is `event: snapshot` with the agent view as JSON in `data`. The stream ends after a view whose status is not `active`.',
  request: { params: AgentParamsSchema },
  responses: {
    200: { description: 'A text/event-stream of `snapshot` events', content: { 'text/event-stream': { schema: z.string() } } },
    ...errors(400, 404),
  },
});

export const stopRoute = createRoute({
  method: 'delete',
  path: '/agents/{id}',
  tags: ['agents'],
  summary: 'Stop the agent for good (its checkpoints stay)',
  request: { params: AgentParamsSchema },
  responses: { 204: { description: 'Stopped (or already finished)' }, ...errors(400, 404) },
});

export const metricsRoute = createRoute({
  method: 'get',
  path: '/metrics',
  tags: ['service'],
  summary: 'Prometheus metrics',
  responses: {
    200: { description: 'Prometheus text format', content: { 'text/plain': { schema: z.string() } } },
    ...errors(),
  },
});

export const openApiRoute = createRoute({
  method: 'get',
  path: '/openapi.json',
  tags: ['service'],
  summary: 'This document',
  responses: {
    200: { description: 'OpenAPI 3 document', content: { 'application/json': { schema: z.record(z.string(), z.unknown()) } } },
    ...errors(),
  },
});
