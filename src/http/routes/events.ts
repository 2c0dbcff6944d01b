/** An agent's inbox: `POST /agents/{id}/events` commits an event, answering 202 only once it is durable. */
import { createRoute, z } from '@hono/zod-openapi';
import type { InboxEvent } from '../../store/store.js';
import { declaredHeadersOnly } from '../middleware/declared-headers.js';
import { AgentParamsSchema } from './schemas.js';
import { BODY_ERRORS, errorResponses, jsonRequestBody, jsonResponse, withJsonBody, type ApiApp, type RouteDeps } from './openapi.js';

const EventBodySchema = z
  .looseObject({
    type: z.string().min(1).max(200).openapi({ example: 'task.add' }),
  })
  .openapi('Event', {
    description: 'An event of the agent\'s machine: `type` plus its payload, e.g. {"type":"task.add","task":"…"}',
    example: { type: 'task.add', task: 'Extract the entities.' },
  });

const EventHeadersSchema = z.object({
  // Matched case-insensitively by the header validator.
  'Idempotency-Key': z
    .string()
    .min(1)
    .max(255)
    .optional()
    .openapi({ description: 'The same key again returns the same 202 {"seq"} and adds no event; with another body, a 422 `idempotency_key_reused`' }),
});

const AcceptedSchema = z.object({ seq: z.number().int() }).openapi('Accepted');

const sendEventRoute = createRoute({
  method: 'post',
  path: '/agents/{id}/events',
  tags: ['agents'],
  summary: "Commit an event to the agent's inbox; 202 only once it is durable",
  request: { params: AgentParamsSchema, headers: EventHeadersSchema, body: jsonRequestBody(EventBodySchema) },
  responses: {
    202: jsonResponse(AcceptedSchema, 'The event is committed; the agent processes its inbox in order'),
    ...errorResponses(...BODY_ERRORS, 404, 409, 422, 429),
  },
});

export function registerEventRoutes(app: ApiApp, { runtime, metrics, jsonBody }: Pick<RouteDeps, 'runtime' | 'metrics' | 'jsonBody'>): void {
  app.openapi(declaredHeadersOnly(app, withJsonBody(sendEventRoute, jsonBody)), async (c) => {
    const { id } = c.req.valid('param');
    const key = c.req.valid('header')['Idempotency-Key'];
    c.req.valid('json'); // checked: an object with a string `type`
    const event = c.get('body') as InboxEvent; // as sent: the machine's schema checks the payload
    const { seq, duplicate } = await runtime.send(id, event, key);
    if (duplicate) c.header('Idempotent-Replayed', 'true');
    else metrics.eventsAccepted.inc({ type: event.type });
    c.get('log').info({ seq, type: event.type, duplicate }, duplicate ? 'event replayed (same Idempotency-Key)' : 'event committed');
    return c.json({ seq }, 202);
  });
}
