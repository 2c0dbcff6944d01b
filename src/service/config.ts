import { parseArgs } from 'node:util';
import { InvalidInputError } from '../core/errors.js';

export interface Config {
  port: number;
  host: string;
  db: string;
  databaseUrl: string | undefined;
  llmBaseUrl: string | undefined;
  llmApiKey: string | undefined;
  model: string;
  llmTimeoutMs: number;
  maxAttempts: number;
  retryBaseMs: number;
  token: string | undefined;
  leaseMs: number;
  /** `full` fsyncs every commit (survives power loss); `normal` survives process crashes. */
  synchronous: 'normal' | 'full';
  simulatedFaultRate: number;
  /** Agents resting this long leave memory (0: never). */
  passivateAfterMs: number;
  /** The Stately inspector's port (`--inspect[=PORT]`); unset: no inspector. */
  inspect: number | undefined;
}

/** Stately's own default for its inspector server, so its docs read the same. */
export const DEFAULT_INSPECT_PORT = 8080;

/** Every flag with its env var and default: the contract's table, in one place. */
const OPTIONS = {
  port: { flag: 'port', env: 'PORT', type: 'int', default: 3000 },
  host: { flag: 'host', env: 'HOST', type: 'string', default: '127.0.0.1' },
  db: { flag: 'db', env: 'DURABLE_AGENTS_DB', type: 'string', default: './data/agents.db' },
  databaseUrl: { flag: 'database-url', env: 'DATABASE_URL', type: 'string', default: undefined },
  llmBaseUrl: { flag: 'llm-base-url', env: 'OPENAI_BASE_URL', type: 'string', default: undefined },
  llmApiKey: { flag: 'llm-api-key', env: 'OPENAI_API_KEY', type: 'string', default: undefined },
  model: { flag: 'model', env: 'OPENAI_MODEL', type: 'string', default: 'gpt-4o-mini' },
  llmTimeoutMs: { flag: 'llm-timeout-ms', env: 'LLM_TIMEOUT_MS', type: 'int', default: 30_000 },
  maxAttempts: { flag: 'max-attempts', env: 'MAX_ATTEMPTS', type: 'int', default: 5 },
  retryBaseMs: { flag: 'retry-base-ms', env: 'RETRY_BASE_MS', type: 'int', default: 500 },
  token: { flag: 'token', env: 'DURABLE_AGENTS_TOKEN', type: 'string', default: undefined },
  leaseMs: { flag: 'lease-ms', env: 'LEASE_MS', type: 'int', default: 10_000 },
  synchronous: { flag: 'synchronous', env: 'DURABLE_AGENTS_SYNCHRONOUS', type: 'string', default: 'full' },
  simulatedFaultRate: { flag: 'simulated-fault-rate', env: 'SIMULATED_FAULT_RATE', type: 'float', default: 0 },
  passivateAfterMs: { flag: 'passivate-after-ms', env: 'PASSIVATE_AFTER_MS', type: 'int', default: 60_000 },
  // `--inspect` alone or `=true`: the default port; `=PORT`: that port; env `false`: off.
  inspect: { flag: 'inspect', env: 'DURABLE_AGENTS_INSPECT', type: 'inspect', default: undefined },
} as const;

export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Config {
  const { values } = parseArgs({
    // Like node's own --inspect[=PORT]: the bare flag takes no value, so "--inspect --port 1" works.
    args: argv.map((arg) => (arg === '--inspect' ? '--inspect=true' : arg)),
    options: Object.fromEntries(Object.values(OPTIONS).map((o) => [o.flag, { type: 'string' as const }])),
    strict: true,
    allowPositionals: false,
  });
  const out: Record<string, unknown> = {};
  for (const [key, option] of Object.entries(OPTIONS)) {
    const raw = (values[option.flag] as string | undefined) ?? nonEmpty(env[option.env]);
    out[key] = raw === undefined ? option.default : convert(raw, option.type, option.flag);
  }
  const config = out as unknown as Config;
  if (config.synchronous !== 'normal' && config.synchronous !== 'full') {
    throw new InvalidInputError(`--synchronous must be "normal" or "full" (got "${String(config.synchronous)}").`);
  }
  if (config.port < 0 || config.port > 65_535) throw new InvalidInputError(`--port must be 0–65535 (got ${config.port}).`);
  if (config.databaseUrl !== undefined && !/^postgres(ql)?:\/\//i.test(config.databaseUrl)) {
    throw new InvalidInputError('--database-url must be a postgres:// (or postgresql://) URL.');
  }
  if (config.leaseMs < 100) throw new InvalidInputError(`--lease-ms must be at least 100 (got ${config.leaseMs}).`);
  return config;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

function convert(raw: string, type: 'int' | 'float' | 'string' | 'inspect', flag: string): unknown {
  // `--token ""` must not silently turn authentication off (nor `--db ""` open a temporary database).
  if (raw === '') throw new InvalidInputError(`--${flag} needs a value.`);
  if (type === 'string') return raw;
  if (type === 'inspect') return inspectPort(raw);
  const n = Number(raw);
  if (!Number.isFinite(n) || (type === 'int' && !Number.isInteger(n)) || n < 0) {
    throw new InvalidInputError(`--${flag} must be a non-negative ${type === 'int' ? 'integer' : 'number'} (got "${raw}").`);
  }
  return n;
}

function inspectPort(raw: string): number | undefined {
  const value = raw.trim().toLowerCase();
  if (value === 'true') return DEFAULT_INSPECT_PORT;
  if (value === 'false') return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65_535) {
    throw new InvalidInputError(`--inspect takes a port from 1 to 65535, as --inspect=PORT (got "${raw}").`);
  }
  return port;
}
