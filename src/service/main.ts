import { serve, type ServerType } from '@hono/node-server';
import type { Config } from './config.js';
import type { LlmClient } from '../llm/client.js';
import { createOpenAiClient } from '../llm/openai-client.js';
import { createSimulatedLlm } from '../llm/simulated-client.js';
import { createLogger, type Logger } from '../core/logger.js';
import { startObservability } from '../observability/service-observability.js';
import { openPostgresStore } from '../store/postgres/postgres-store.js';
import { openSqliteStore } from '../store/sqlite/sqlite-store.js';
import type { Store } from '../store/store.js';
import { agentDefinition } from '../agents/reference/definition.js';
import { createRuntime, type Runtime } from '../runtime/runtime.js';
import { createServer } from '../http/app.js';

export interface Service {
  runtime: Runtime;
  server: ServerType;
  url: string;
  close(): Promise<void>;
}

/** How long shutdown waits for in-flight requests before cutting their connections. */
const SHUTDOWN_GRACE_MS = 5_000;

/**
 * The composition root: open the store, pick the LLM, set up metrics, traces (when OTEL_* asks) and
 * the inspector (with --inspect), recover agents, serve HTTP.
 */
export async function main(config: Config, log: Logger = createLogger(), env: NodeJS.ProcessEnv = process.env): Promise<Service> {
  const llm = chooseLlm(config, log);
  const store = await openStore(config);
  log.info(
    { store: store.kind, location: store.location, ...(store.leases ? { processId: store.leases.processId, leaseMs: store.leases.leaseMs } : { synchronous: config.synchronous }) },
    'store open',
  );
  const observability = await startObservability({ inspectPort: config.inspect, env, log });
  const runtime = await createRuntime({
    store,
    logger: log,
    observer: observability.observer,
    ...(observability.inspect ? { inspect: observability.inspect } : {}),
    ...(config.passivateAfterMs > 0 ? { passivateAfterMs: config.passivateAfterMs } : {}),
    machines: [
      agentDefinition({
        llm,
        defaults: {
          model: config.model,
          maxAttempts: config.maxAttempts,
          baseDelayMs: config.retryBaseMs,
          timeoutMs: config.llmTimeoutMs,
        },
      }),
    ],
  });
  const shutdown = new AbortController();
  const app = createServer({ runtime, token: config.token, logger: log, shutdown: shutdown.signal, metrics: observability.metrics });
  let listening: { server: ServerType; url: string };
  try {
    listening = await listen(app.fetch, config);
  } catch (err) {
    await runtime.close();
    await observability.close();
    throw err;
  }
  const { server, url } = listening;
  log.info(
    { url, store: store.kind, location: store.location, llm: llm.description, auth: config.token ? 'bearer token' : 'none' },
    `durable-agents listening on ${url} (store: ${store.kind} ${store.location}; LLM: ${llm.description})`,
  );
  observability.announce();

  let closing: Promise<void> | undefined;
  return {
    runtime,
    server,
    url,
    close: () =>
      (closing ??= (async () => {
        // No new connections; open event streams end; in-flight requests finish (or are cut after
        // the grace period); then the runtime commits what is queued and closes the store.
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        shutdown.abort();
        if ('closeIdleConnections' in server) server.closeIdleConnections();
        const cut = setTimeout(() => 'closeAllConnections' in server && server.closeAllConnections(), SHUTDOWN_GRACE_MS);
        await closed;
        clearTimeout(cut);
        await runtime.close();
        await observability.close();
      })()),
  };
}

/** `--database-url` (Postgres, shared by many processes) wins over `--db` (one SQLite file, one process). */
function openStore(config: Config): Promise<Store> {
  if (!config.databaseUrl) return openSqliteStore(config.db, { synchronous: config.synchronous });
  const { url, schema } = splitSchema(config.databaseUrl);
  return openPostgresStore(url, { leaseMs: config.leaseMs, ...(schema ? { schema } : {}) });
}

/**
 * A `?schema=NAME` parameter (as Prisma spells it) picks the Postgres schema; pg itself does not
 * know it, so it is taken off the URL.
 */
export function splitSchema(databaseUrl: string): { url: string; schema: string | undefined } {
  let parsed: URL;
  try {
    parsed = new URL(databaseUrl);
  } catch {
    return { url: databaseUrl, schema: undefined }; // pg reports a malformed URL in its own words
  }
  const schema = parsed.searchParams.get('schema') ?? undefined;
  parsed.searchParams.delete('schema');
  return { url: parsed.toString(), schema };
}

function chooseLlm(config: Config, log: Logger): LlmClient {
  if (config.llmApiKey || config.llmBaseUrl) {
    return createOpenAiClient({
      ...(config.llmApiKey ? { apiKey: config.llmApiKey } : {}),
      ...(config.llmBaseUrl ? { baseURL: config.llmBaseUrl } : {}),
    });
  }
  log.warn(
    '*** SIMULATED LLM: neither OPENAI_API_KEY nor OPENAI_BASE_URL is set, so answers are made up locally. ' +
      'Set one of them (or --llm-api-key / --llm-base-url) to call a real model. ***',
  );
  return createSimulatedLlm({ faultRate: config.simulatedFaultRate });
}

function listen(fetch: Parameters<typeof serve>[0]['fetch'], config: Config): Promise<{ server: ServerType; url: string }> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port: config.port, hostname: config.host }, (info) => {
      resolve({ server, url: `http://${config.host}:${info.port}` });
    });
    server.once('error', reject);
  });
}
