import type { OpenAPIHono } from '@hono/zod-openapi';
import { toStatelyCode } from '../observability/stately-code.js';
import type { Runtime } from '../runtime/runtime.js';
import type { AppEnv } from './env.js';
import { getMachineStatelyRoute } from './routes.js';

/**
 * `GET /machines/:name/stately`: the machine as `createMachine({...})` text for Stately's editor.
 * Mount it after the auth middleware (it is then covered like every route).
 */
export function mountStatelyRoute(app: OpenAPIHono<AppEnv>, runtime: Pick<Runtime, 'machine'>): void {
  app.openapi(getMachineStatelyRoute, (c) => {
    const { name } = c.req.valid('param');
    const machine = runtime.machine(name);
    // The user's machine, not the durable wrapper: the same config, without our plumbing.
    return c.text(toStatelyCode(machine.machine), 200, { 'Content-Type': 'text/plain; charset=utf-8' });
  });
}
