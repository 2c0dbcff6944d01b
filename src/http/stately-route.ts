import type { OpenAPIHono } from '@hono/zod-openapi';
import { NotFoundError } from '../errors.js';
import { toStatelyCode } from '../observability/stately-code.js';
import type { Runtime } from '../runtime/runtime.js';
import type { AppEnv } from './env.js';
import { truncate } from './errors.js';
import { getMachineStatelyRoute } from './routes.js';

const mounted = new WeakSet<object>();

/**
 * `GET /machines/:name/stately`: the machine as `createMachine({...})` text for Stately's editor.
 * Mount it after the auth middleware (it is then covered like every route). Mounting twice on the
 * same app does nothing, so a test may mount it on an app whose server already did.
 */
export function mountStatelyRoute(app: OpenAPIHono<AppEnv>, runtime: Pick<Runtime, 'machines'>): void {
  if (mounted.has(app)) return;
  mounted.add(app);
  app.openapi(getMachineStatelyRoute, (c) => {
    const { name } = c.req.valid('param');
    const machine = runtime.machines.get(name);
    if (!machine) throw new NotFoundError('machine', truncate(name, 128));
    // The user's machine, not the durable wrapper: the same config, without our plumbing.
    return c.text(toStatelyCode(machine.machine), 200, { 'Content-Type': 'text/plain; charset=utf-8' });
  });
}
