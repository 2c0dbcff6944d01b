/** An agent's action log: every logged invoked call with its input and result. */
import { createRoute, z } from '@hono/zod-openapi';
import { AgentParamsSchema, Timestamp } from './schemas.js';
import { errorResponses, jsonResponse, type ApiApp, type RouteDeps } from './openapi.js';

const ActionSchema = z
  .object({
    seq: z.number().int().openapi({ description: 'The checkpoint whose transition recorded this action' }),
    action: z.string(),
    payload: z.unknown(),
    result: z.unknown(),
    createdAt: Timestamp,
  })
  .openapi('Action');

const ActionListSchema = z.object({ items: z.array(ActionSchema) }).openapi('ActionList');

const listActionsRoute = createRoute({
  method: 'get',
  path: '/agents/{id}/actions',
  tags: ['agents'],
  summary: 'The action log: every logged invoked call with its input and result',
  request: { params: AgentParamsSchema },
  responses: { 200: jsonResponse(ActionListSchema, 'Oldest first'), ...errorResponses(400, 404) },
});

export function registerActionRoutes(app: ApiApp, { runtime }: Pick<RouteDeps, 'runtime'>): void {
  app.openapi(listActionsRoute, async (c) => {
    const actions = await runtime.actions(c.req.valid('param').id);
    const items = actions.map(({ seq, action, payload, result, createdAt }) => ({ seq, action, payload, result, createdAt }));
    return c.json({ items }, 200);
  });
}
