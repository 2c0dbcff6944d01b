/** The registered machines: their summaries, their definitions, and their code for Stately's editor. */
import { createRoute, z } from '@hono/zod-openapi';
import { toStatelyCode } from '../../observability/stately-code.js';
import { errorResponses, jsonResponse, type ApiApp, type RouteDeps } from './openapi.js';

const MachineSummarySchema = z
  .object({
    name: z.string(),
    version: z.string(),
    states: z.array(z.string()).openapi({ description: 'Top-level state names' }),
    events: z.array(z.string()).openapi({
      description:
        "Event types a caller may send, as the machine writes them: literal types and wildcard descriptors, `'*'` (any type " +
        "but the runtime's and XState's own) and partial ones like `'event.*'` (`event.a`, `event.a.b`)",
    }),
  })
  .openapi('MachineSummary');

const MachineListSchema = z.object({ items: z.array(MachineSummarySchema) }).openapi('MachineList');

const MachineDetailSchema = z
  .object({
    name: z.string(),
    version: z.string(),
    definition: z.record(z.string(), z.unknown()).openapi({ description: '`machine.toJSON()`: importable into Stately tools' }),
  })
  .openapi('Machine');

const StatelyCodeSchema = z.string().openapi('StatelyCode', {
  description:
    "`createMachine({...})` with the machine's config as JSON, for Stately's editor (Import from code). " +
    'Actions, guards and actors appear by name; data mappers (context factory, invoke input, params) are left out; secrets are redacted.',
  example: 'createMachine({\n  "id": "agent",\n  "initial": "idle",\n  "states": { "idle": {} }\n})\n',
});

const MachineParamsSchema = z.object({
  name: z.string().openapi({ param: { name: 'name', in: 'path' }, example: 'agent' }),
});

const listMachinesRoute = createRoute({
  method: 'get',
  path: '/machines',
  tags: ['machines'],
  summary: 'The registered machines with their top-level states and accepted events',
  responses: { 200: jsonResponse(MachineListSchema, 'Every registered machine'), ...errorResponses() },
});

const getMachineRoute = createRoute({
  method: 'get',
  path: '/machines/{name}',
  tags: ['machines'],
  summary: "A machine's definition (`machine.toJSON()`), importable into Stately tools",
  request: { params: MachineParamsSchema },
  responses: { 200: jsonResponse(MachineDetailSchema, 'The machine'), ...errorResponses(404) },
});

const getMachineStatelyRoute = createRoute({
  method: 'get',
  path: '/machines/{name}/stately',
  tags: ['machines'],
  summary: "The machine as code for Stately's editor: paste it into Import from code",
  request: { params: MachineParamsSchema },
  responses: {
    200: { description: '`createMachine({...})` as JavaScript text', content: { 'text/plain': { schema: StatelyCodeSchema } } },
    ...errorResponses(404),
  },
});

export function registerMachineRoutes(app: ApiApp, { runtime }: Pick<RouteDeps, 'runtime'>): void {
  app.openapi(listMachinesRoute, (c) => {
    const items = [...runtime.machines.values()].map((m) => ({
      name: m.name,
      version: m.version,
      states: [...m.states],
      events: [...m.eventTypes],
    }));
    return c.json({ items }, 200);
  });

  app.openapi(getMachineRoute, (c) => {
    const machine = runtime.machine(c.req.valid('param').name);
    const definition = machine.machine.toJSON() as unknown as Record<string, unknown>;
    return c.json({ name: machine.name, version: machine.version, definition }, 200);
  });

  app.openapi(getMachineStatelyRoute, (c) => {
    const machine = runtime.machine(c.req.valid('param').name);
    // The user's machine, not the durable wrapper: the same config, without our plumbing.
    return c.text(toStatelyCode(machine.machine), 200, { 'Content-Type': 'text/plain; charset=utf-8' });
  });
}
