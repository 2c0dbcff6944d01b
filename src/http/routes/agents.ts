/** Agents as a resource: spawn, list, read, stop, and fork one from a checkpoint. */
import { createRoute, z } from '@hono/zod-openapi';
import { AgentListItemSchema, AgentParamsSchema, AgentStatusSchema, AgentViewSchema, IdSchema, intParam } from './schemas.js';
import { BODY_ERRORS, errorResponses, jsonRequestBody, jsonResponse, withJsonBody, type ApiApp, type RouteDeps } from './openapi.js';

const DEFAULT_PAGE_SIZE = 100;

const SpawnBodySchema = z
  .strictObject({
    machine: z.string().min(1).max(128).openapi({ example: 'agent' }),
    id: IdSchema.optional(),
    input: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({ example: { tasks: ['Summarize the design card.'], webhook: 'http://127.0.0.1:9000/hook' } }),
  })
  .openapi('SpawnRequest');

const ListQuerySchema = z.object({
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
  include: z
    .enum(['context'])
    .optional()
    .openapi({ param: { name: 'include', in: 'query' }, description: '`context`: each item is the whole view, context included (a page may then be large)' }),
});

const AgentPageSchema = z
  .object({ items: z.array(AgentListItemSchema), nextCursor: z.string().nullable() })
  .openapi('AgentPage');

const ForkBodySchema = z
  .strictObject({
    checkpoint: z.number().int().min(1).openapi({ description: 'The seq of the checkpoint to restore', example: 3 }),
    id: IdSchema.optional().openapi({ description: 'The new agent id (generated when missing)' }),
  })
  .openapi('ForkRequest');

const spawnRoute = createRoute({
  method: 'post',
  path: '/agents',
  tags: ['agents'],
  summary: 'Spawn an agent (idempotent on `id`)',
  request: { body: jsonRequestBody(SpawnBodySchema) },
  responses: {
    201: jsonResponse(AgentViewSchema, 'A new agent, started'),
    200: jsonResponse(AgentViewSchema, 'An agent with this id and machine already existed: that agent'),
    ...errorResponses(...BODY_ERRORS, 404, 409),
  },
});

const listAgentsRoute = createRoute({
  method: 'get',
  path: '/agents',
  tags: ['agents'],
  summary: 'List agents, oldest first, a page at a time',
  request: { query: ListQuerySchema },
  responses: { 200: jsonResponse(AgentPageSchema, 'One page of agents'), ...errorResponses(400) },
});

const getAgentRoute = createRoute({
  method: 'get',
  path: '/agents/{id}',
  tags: ['agents'],
  summary: "An agent's view",
  request: { params: AgentParamsSchema },
  responses: { 200: jsonResponse(AgentViewSchema, 'The agent'), ...errorResponses(400, 404) },
});

const stopRoute = createRoute({
  method: 'delete',
  path: '/agents/{id}',
  tags: ['agents'],
  summary: 'Stop the agent for good (its checkpoints stay)',
  request: { params: AgentParamsSchema },
  responses: { 204: { description: 'Stopped (or already finished)' }, ...errorResponses(400, 404) },
});

const forkRoute = createRoute({
  method: 'post',
  path: '/agents/{id}/fork',
  tags: ['checkpoints'],
  summary: 'A new agent restored from one checkpoint of this one, started',
  request: { params: AgentParamsSchema, body: jsonRequestBody(ForkBodySchema) },
  responses: { 201: jsonResponse(AgentViewSchema, 'The new agent'), ...errorResponses(...BODY_ERRORS, 404, 409, 410) },
});

export function registerAgentRoutes(app: ApiApp, { runtime, metrics, jsonBody }: Pick<RouteDeps, 'runtime' | 'metrics' | 'jsonBody'>): void {
  app.openapi(withJsonBody(spawnRoute, jsonBody), async (c) => {
    const { machine, id } = c.req.valid('json');
    const { input } = c.get('body') as { input?: unknown }; // as sent: the machine's schema checks it
    const { view, created } = await runtime.spawn(machine, { ...(id === undefined ? {} : { id }), input });
    if (created) metrics.agentsSpawned.inc({ machine });
    c.get('log').info({ agentId: view.id, machine, created }, created ? 'agent spawned' : 'agent already existed');
    return created ? c.json(view, 201) : c.json(view, 200);
  });

  app.openapi(listAgentsRoute, async (c) => {
    const { limit = DEFAULT_PAGE_SIZE, include, ...filters } = c.req.valid('query');
    // Summaries unless asked: a page of agents with long conversations would be hundreds of megabytes.
    return c.json(await runtime.list({ ...definedOnly(filters), limit }, { ...(include ? { include } : {}) }), 200); // a bad cursor: the store's 400
  });

  app.openapi(getAgentRoute, async (c) => c.json(await runtime.view(c.req.valid('param').id), 200));

  app.openapi(stopRoute, async (c) => {
    await runtime.stop(c.req.valid('param').id);
    c.get('log').info('agent stopped');
    return c.body(null, 204);
  });

  app.openapi(withJsonBody(forkRoute, jsonBody), async (c) => {
    const { id } = c.req.valid('param');
    const { checkpoint, id: newId } = c.req.valid('json');
    const view = await runtime.fork(id, checkpoint, newId);
    c.get('log').info({ from: { agentId: id, seq: checkpoint }, forkId: view.id }, 'agent forked');
    return c.json(view, 201);
  });
}

function definedOnly<T extends Record<string, unknown>>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as never;
}
