import type { Logger } from '../observability/logger.js';

/** What the middleware puts on each request's context. */
export interface AppEnv {
  Variables: {
    requestId: string;
    /** A pino child carrying `reqId` (and `agentId` on /agents/:id/... routes). */
    log: Logger;
  };
}
