import type { Logger } from '../core/logger.js';

/** What the middleware puts on each request's context. */
export interface AppEnv {
  Variables: {
    requestId: string;
    /** A pino child carrying `reqId` (and `agentId` on /agents/:id/... routes). */
    log: Logger;
    /**
     * The JSON body exactly as parsed (set by middleware/json-body.ts). zod's output is a rebuilt copy, which
     * drops or mis-assigns keys such as `__proto__`; payloads the machine validates itself (spawn
     * input, events) are handed to the runtime from here, after the route schema has checked them.
     */
    body: unknown;
  };
}
