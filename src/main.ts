import { serve, type ServerType } from '@hono/node-server';
import type { Config } from './config.js';
import type { LlmClient } from './llm/client.js';
import { createOpenAiClient } from './llm/openai-client.js';
import { createSimulatedLlm } from './llm/simulated-client.js';
import { createLogger, type Logger } from './observability/logger.js';
import { openSqliteStore } from './persistence/sqlite/sqlite-store.js';
import { agentDefinition } from './runtime/agent-definition.js';
import { createRuntime, type Runtime } from './runtime/runtime.js';
import { createServer } from './server.js';

export interface Service {
  runtime: Runtime;
  server: ServerType;
  url: string;
  close(): Promise<void>;
}

/** The composition root: open the store, pick the LLM, recover agents, serve HTTP. */
export async function main(config: Config, log: Logger = createLogger()): Promise<Service> {
  if (config.databaseUrl) {
    throw new Error('--database-url (the Postgres store) is not available in this build yet; use --db for SQLite.');
  }
  const llm = chooseLlm(config, log);
  const store = await openSqliteStore(config.db, { synchronous: config.synchronous });
  log.info({ store: store.kind, location: store.location, synchronous: config.synchronous }, 'store open');
  const runtime = await createRuntime({
    store,
    logger: log,
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
  const app = createServer({ runtime });
  const { server, url } = await listen(app.fetch, config);
  log.info({ url, store: store.location, llm: llm.description }, `durable-agents listening on ${url}`);

  let closing: Promise<void> | undefined;
  return {
    runtime,
    server,
    url,
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await runtime.close();
      })()),
  };
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
