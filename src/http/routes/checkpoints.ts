/** An agent's checkpoints: one per committed transition, listed or read whole. */
import { createRoute, z } from '@hono/zod-openapi';
import { AgentParamsSchema, IdSchema, intParam, Timestamp } from './schemas.js';
import { errorResponses, jsonResponse, type ApiApp, type RouteDeps } from './openapi.js';

const CheckpointParamsSchema = z.object({
  id: IdSchema.openapi({ param: { name: 'id', in: 'path' } }),
  seq: intParam(1, Number.MAX_SAFE_INTEGER, 'a checkpoint seq is a positive integer').openapi({
    param: { name: 'seq', in: 'path' },
    example: 1,
  }),
});

const CheckpointSummarySchema = z
  .object({
    seq: z.number().int(),
    state: z.unknown(),
    progress: z.number().int(),
    createdAt: Timestamp,
    status: z.string().openapi({ description: 'The agent status this checkpoint recorded' }),
    eventType: z.string().openapi({ description: 'The event that caused the transition (xstate.init for the first)' }),
  })
  .openapi('CheckpointSummary');

const CheckpointListSchema = z
  .object({
    items: z.array(CheckpointSummarySchema),
    prunedBefore: z.number().int().openapi({
      description: 'Checkpoints before this seq were pruned by the retention policy (0: none); reading or forking one is a 410',
    }),
  })
  .openapi('CheckpointList');

const CheckpointSchema = z
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

const listCheckpointsRoute = createRoute({
  method: 'get',
  path: '/agents/{id}/checkpoints',
  tags: ['checkpoints'],
  summary: "The agent's checkpoints, oldest first",
  request: { params: AgentParamsSchema },
  responses: { 200: jsonResponse(CheckpointListSchema, 'One item per committed transition'), ...errorResponses(400, 404) },
});

const getCheckpointRoute = createRoute({
  method: 'get',
  path: '/agents/{id}/checkpoints/{seq}',
  tags: ['checkpoints'],
  summary: 'One persisted snapshot, whole',
  request: { params: CheckpointParamsSchema },
  responses: { 200: jsonResponse(CheckpointSchema, 'The checkpoint with its snapshot'), ...errorResponses(400, 404, 410) },
});

export function registerCheckpointRoutes(app: ApiApp, { runtime }: Pick<RouteDeps, 'runtime'>): void {
  app.openapi(listCheckpointsRoute, async (c) => {
    const { id } = c.req.valid('param');
    const checkpoints = await runtime.checkpoints(id);
    const items = checkpoints.map(({ seq, state, progress, createdAt, status, eventType }) => ({ seq, state, progress, createdAt, status, eventType }));
    return c.json({ items, prunedBefore: await runtime.prunedBefore(id) }, 200);
  });

  app.openapi(getCheckpointRoute, async (c) => {
    const { id, seq } = c.req.valid('param');
    return c.json(await runtime.checkpoint(id, seq), 200); // parsed by the runtime: a damaged snapshot is a 500 corrupt_state
  });
}
