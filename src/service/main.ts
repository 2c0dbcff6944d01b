import { serve, type ServerType } from '@hono/node-server';
import { agentDefaults, type Config } from './config.js';
import { logGreeting, type Announce } from './greeting.js';
import type { LlmClient } from '../llm/client.js';
import { createOpenAiClient } from '../llm/openai-client.js';
import { createSimulatedLlm } from '../llm/simulated-client.js';
import { createLogger, type Logger } from '../core/logger.js';
import { startObservability } from '../observability/service-observability.js';
import { openPostgresStore } from '../store/postgres/postgres-store.js';
import { openSqliteStore } from '../store/sqlite/sqlite-store.js';
import type { Store } from '../store/store.js';
import { BUILTIN_TOOLS } from '../agents/reference/builtin-tools.js';
import { agentDefinition } from '../agents/reference/definition.js';
import type { RetentionPolicy } from '../runtime/pruner.js';
import { createRuntime, type Runtime } from '../runtime/runtime.js';
import { loadConfigFile, mergeMcpServers, mergePrices } from './config-file.js';
import { createMcpServers } from '../mcp/servers.js';
import { createServer } from '../http/app.js';
import { setMaxListeners } from 'node:events';

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
 * the inspector (with --inspect), recover agents, serve HTTP. `announce` says where it listens
 * (default: one JSON log line; the CLI prints a greeting on a terminal instead).
 */
export async function main(
  config: Config,
  log: Logger = createLogger({ level: config.log.level }),
  env: NodeJS.ProcessEnv = process.env,
  announce: Announce = logGreeting(log),
): Promise<Service> {
  const llm = chooseLlm(config.llm);
  // Before anything is opened: a config that cannot be used stops the service with its one message.
  const extension = config.configFile === undefined ? undefined : await loadConfigFile(config.configFile, { llm, logger: log });
  // --mcp's servers and the config's: a name both give stops the service here too.
  const mcpConfigs = mergeMcpServers(config.mcp, extension);
  // --llm-prices' models and the config's: a model both price stops it too.
  const prices = mergePrices(config.agent.prices, extension);
  if (llm.kind === 'simulated') warnSimulated(log);
  if (extension) {
    log.info({ file: extension.file, machines: extension.machines.map((m) => m.name), tools: extension.tools.map((t) => t.name) }, 'config loaded');
  }
  const configTools = extension?.tools ?? [];
  // With the simulated LLM, a calculator and an approval-gated note board show the tool loop (a config's tool of the same name wins).
  const builtinTools = llm.kind === 'simulated' ? BUILTIN_TOOLS.filter((t) => !configTools.some((c) => c.name === t.name)) : [];
  const tools = [...builtinTools, ...configTools];
  // First: a SQLite file another live serve holds stops this one here (StoreLockedError), before anything is restored.
  const store = await openStore(config.store);
  // Connected when an agent first needs their tools; closed after the runtime.
  const mcp = Object.keys(mcpConfigs).length > 0 ? createMcpServers(mcpConfigs, { logger: log }) : undefined;
  if (mcp) log.info({ mcpServers: mcp.names }, 'MCP servers configured (connected when an agent first needs their tools)');
  // A shared store's agents are guarded by leases; a SQLite file's commits by its fsync setting.
  const durability = store.leases ? { leaseMs: store.leases.leaseMs } : { synchronous: config.store.synchronous };
  const readOnly = store.readOnly === true ? { readOnly: true } : {};
  const storeFacts = { kind: store.kind, location: store.location, ...durability, ...readOnly };
  log.info({ store: store.kind, location: store.location, ...(store.leases ? { processId: store.leases.processId } : {}), ...durability, ...readOnly }, 'store open');
  const observability = await startObservability({ inspectPort: config.inspect, env, log, effects: store });
  // The port is bound before any agent is restored: a serve that cannot listen (EADDRINUSE) exits
  // having run nothing. A request that comes while agents are restored waits for the app.
  let appReady!: (fetch: Fetch) => void;
  const app = new Promise<Fetch>((resolve) => (appReady = resolve));
  let listening: { server: ServerType; url: string };
  try {
    listening = await listen((request, bindings) => app.then((fetch) => fetch(request, bindings)), config.server);
  } catch (err) {
    await store.close();
    await observability.close();
    await mcp?.close();
    throw err;
  }
  const { server, url } = listening;
  const { passivateAfterMs } = config.runtime;
  const runtime = await createRuntime({
    store,
    logger: log,
    observer: observability.observer,
    ...(observability.inspect ? { inspect: observability.inspect } : {}),
    ...(passivateAfterMs > 0 ? { passivateAfterMs } : {}),
    llmLimits: { concurrency: config.flow.llmConcurrency, ...definedOnly({ rpm: config.flow.llmRpm, tpm: config.flow.llmTpm }) },
    maxInbox: config.flow.maxInbox,
    ...retentionOf(config),
    machines: [
      agentDefinition({
        llm,
        defaults: { ...agentDefaults(config), ...(prices ? { prices } : {}) },
        outbound: config.outbound.allow,
        ...(tools.length > 0 ? { tools } : {}),
        ...(mcp ? { mcp } : {}),
      }),
      ...(extension?.machines ?? []),
    ],
  }).catch(async (err: unknown) => {
    await mcp?.close();
    return stopListening(server, appReady, err);
  });
  const shutdown = new AbortController();
  // Every open stream listens for the shutdown: Node's default of 10 listeners would warn past 10 streams.
  setMaxListeners(0, shutdown.signal);
  appReady(createServer({ runtime, token: config.server.token, logger: log, shutdown: shutdown.signal, metrics: observability.metrics, mcpServers: mcp?.names ?? [] }).fetch);
  announce({ url, llm: { kind: llm.kind, description: llm.description, model: config.llm.model }, store: storeFacts, auth: config.server.token !== undefined });
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
        // After the runtime: no call of an agent is running any more; the server processes stop.
        await mcp?.close();
        await observability.close();
      })()),
  };
}

/** `--database-url` (Postgres, shared by many processes) wins over `--db` (one SQLite file, one process). */
function openStore(config: Config['store']): Promise<Store> {
  const { readOnly } = config;
  if (!config.databaseUrl) return openSqliteStore(config.db, { synchronous: config.synchronous, readOnly });
  const { url, schema } = splitSchema(config.databaseUrl);
  return openPostgresStore(url, { leaseMs: config.leaseMs, readOnly, ...(schema ? { schema } : {}) });
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

function chooseLlm(config: Config['llm']): LlmClient {
  if (config.apiKey || config.baseUrl) {
    return createOpenAiClient({
      ...(config.apiKey ? { apiKey: config.apiKey } : {}),
      ...(config.baseUrl ? { baseURL: config.baseUrl } : {}),
    });
  }
  return createSimulatedLlm({ faultRate: config.simulatedFaultRate, wordDelayMs: config.simulatedWordDelayMs });
}

function warnSimulated(log: Logger): void {
  log.warn(
    '*** SIMULATED LLM: neither OPENAI_API_KEY nor OPENAI_BASE_URL is set, so answers are made up locally. ' +
      'Set one of them (or --llm-api-key / --llm-base-url) to call a real model. ***',
  );
}

type Fetch = Parameters<typeof serve>[0]['fetch'];

/** Restoring failed once the port was bound: requests waiting for the app get a 503, and the port is let go. */
async function stopListening(server: ServerType, answer: (fetch: Fetch) => void, err: unknown): Promise<never> {
  answer(() => new Response(null, { status: 503 }));
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  if ('closeAllConnections' in server) server.closeAllConnections();
  await closed;
  throw err;
}

function listen(fetch: Fetch, config: Config['server']): Promise<{ server: ServerType; url: string }> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port: config.port, hostname: config.host }, (info) => {
      // An IPv6 address goes in brackets in a URL (http://[::1]:3000).
      const host = config.host.includes(':') ? `[${config.host}]` : config.host;
      resolve({ server, url: `http://${host}:${info.port}` });
    });
    server.once('error', reject);
  });
}

/** The pruner's policy from the flags; none when every rule is off (everything is kept). */
function retentionOf({ retention }: Config): { retention: RetentionPolicy } | Record<string, never> {
  const policy: RetentionPolicy = {
    ...(retention.keepCheckpoints > 0 ? { keepCheckpoints: retention.keepCheckpoints } : {}),
    ...(retention.keepDays > 0 ? { keepDays: retention.keepDays } : {}),
    ...(retention.keepFinishedDays > 0 ? { keepFinishedDays: retention.keepFinishedDays } : {}),
  };
  return Object.keys(policy).length > 0 ? { retention: policy } : {};
}

/** The settings that are set (an optional property of ours takes no explicit undefined). */
function definedOnly<T extends Record<string, unknown>>(values: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };
}
