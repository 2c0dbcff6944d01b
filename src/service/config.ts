import { parseArgs } from 'node:util';
import { InvalidInputError } from '../core/errors.js';
import { DEFAULT_LOG_LEVEL, LOG_LEVELS, type LogLevel } from '../core/logger.js';
import { parseOutboundPolicy, type OutboundPolicy } from '../core/outbound.js';
import { DEFAULT_AGENT_DEFAULTS } from '../agents/reference/machine.js';
import type { AgentDefaults } from '../agents/reference/types.js';
import { DEFAULT_LEASE_MS } from '../store/postgres/postgres-store.js';
import { DEFAULT_LLM_CONCURRENCY, DEFAULT_MAX_INBOX } from '../runtime/runtime.js';
import { inspectPort, integer, mcpServers, modelPrices, nonNegativeNumber, oneOf, onOff, outboundPolicy, postgresUrl, text, type Parse } from './config-values.js';
import type { McpServerConfig } from '../mcp/types.js';

/** `durable-agents serve`'s settings, by concern. Each comes from a flag, else its env var, else its default. */
export interface Config {
  server: {
    port: number;
    host: string;
    /** When set, every route but /healthz needs `Authorization: Bearer <token>`. */
    token: string | undefined;
  };
  store: {
    db: string;
    /** A postgres:// URL selects the Postgres store (shared by many processes) instead of `db`. */
    databaseUrl: string | undefined;
    /** `full` fsyncs every commit (survives power loss); `normal` survives process crashes. SQLite only. */
    synchronous: 'normal' | 'full';
    /** Postgres only: how long a dead process's agents wait before another takes them over. */
    leaseMs: number;
    /** Serve what is stored and run nothing (no lock on a SQLite file, no lease); every write answers 503 `read_only`. */
    readOnly: boolean;
  };
  llm: {
    baseUrl: string | undefined;
    apiKey: string | undefined;
    model: string;
    timeoutMs: number;
    /** The simulated LLM's share of failing calls (used when no real LLM is configured). */
    simulatedFaultRate: number;
    /** The simulated LLM's pause between streamed words. */
    simulatedWordDelayMs: number;
  };
  agent: {
    maxAttempts: number;
    baseDelayMs: number;
    /** Unset: the LLM's timeout bounds the webhook too. */
    webhookTimeoutMs: number | undefined;
    /** Dollars per million tokens by model, for budgets in dollars (input `budget.maxCostUsd`); unset: none known. */
    prices: AgentDefaults['prices'] | undefined;
  };
  outbound: {
    /** Where webhooks and HTTP tools may send requests; unset: anywhere but link-local and cloud-metadata addresses. */
    allow: OutboundPolicy;
  };
  runtime: {
    /** Agents resting this long leave memory (0: never). */
    passivateAfterMs: number;
  };
  /** Flow control: what the fleet may ask of the LLM at once, and how much an agent's inbox holds. */
  flow: {
    /** LLM calls in flight at once, for all agents together (it adapts down on 429s). */
    llmConcurrency: number;
    /** LLM requests started per minute; unset: no limit. */
    llmRpm: number | undefined;
    /** LLM tokens spent per minute; unset: no limit. */
    llmTpm: number | undefined;
    /** Events waiting in one agent's inbox, at most; beyond it a send is refused (429 inbox_full). */
    maxInbox: number;
  };
  /** What the background pruner deletes; 0: that rule is off (the default: everything is kept). */
  retention: {
    keepCheckpoints: number;
    keepDays: number;
    keepFinishedDays: number;
  };
  log: {
    level: LogLevel;
    /** `auto`: readable lines on a terminal, JSON lines otherwise. */
    format: LogFormatSetting;
  };
  /** The Stately inspector's port (`--inspect[=PORT]`); unset: no inspector. */
  inspect: number | undefined;
  /** A module adding machines and code tools (`--config FILE`, see config-file.ts); unset: none. */
  configFile: string | undefined;
  /** MCP servers by name (`--mcp NAME=COMMAND|URL`, repeatable), beside a config file's `mcpServers`; none: `{}`. */
  mcp: Record<string, McpServerConfig>;
}

export const LOG_FORMATS = ['auto', 'pretty', 'json'] as const;
export type LogFormatSetting = (typeof LOG_FORMATS)[number];

/** Stately's own default for its inspector server, so its docs read the same. */
export const DEFAULT_INSPECT_PORT = 8080;

/**
 * The server passivates agents that rested a minute; the library (RuntimeOptions.passivateAfterMs)
 * keeps every agent in memory unless told otherwise. A server lives for weeks while clients spawn
 * agents without bound, so its memory must follow the working set; a program embedding the
 * runtime knows its own agents and memory, and a runtime that keeps what it runs is the simpler one
 * to reason about (and to test).
 */
const SERVER_PASSIVATE_AFTER_MS = 60_000;

export interface Option<T> {
  flag: string;
  env: string;
  default: T;
  parse: Parse<T>;
  /** For `--help`: the value's placeholder, what the setting does, and the default in words when it is not a value. */
  value: string;
  help: string;
  defaultText?: string;
}

type Sections = Omit<Config, 'inspect' | 'configFile' | 'mcp'>;
type OptionTable = { [S in keyof Sections]: { [K in keyof Sections[S]]-?: Option<Sections[S][K]> } };

/**
 * Every flag with its env var and default, in one place: the contract's table, and what we added
 * (webhook timeout, outbound allow-list, log level and format, synchronous, passivation, fault
 * rate, inspector). Where
 * the library has a default (the agent's, the lease's), this table takes it from there.
 */
export const OPTIONS: OptionTable = {
  server: {
    port: { flag: 'port', env: 'PORT', default: 3000, parse: integer({ max: 65_535 }), value: 'N', help: 'port to listen on (0: any free one)' },
    host: { flag: 'host', env: 'HOST', default: '127.0.0.1', parse: text, value: 'H', help: 'address to listen on' },
    token: {
      flag: 'token', env: 'DURABLE_AGENTS_TOKEN', default: undefined, parse: text, value: 'T',
      help: 'require "Authorization: Bearer T" on every route but /healthz', defaultText: 'unset: no authentication',
    },
  },
  store: {
    db: { flag: 'db', env: 'DURABLE_AGENTS_DB', default: './data/agents.db', parse: text, value: 'PATH', help: 'SQLite file (created on first start)' },
    databaseUrl: {
      flag: 'database-url', env: 'DATABASE_URL', default: undefined, parse: postgresUrl, value: 'URL',
      help: 'a postgres:// URL: use Postgres, shared by many processes, instead of --db', defaultText: 'unset',
    },
    synchronous: {
      flag: 'synchronous', env: 'DURABLE_AGENTS_SYNCHRONOUS', default: 'full', parse: oneOf(['normal', 'full']), value: 'normal|full',
      help: 'SQLite: full survives power loss, normal survives process crashes',
    },
    leaseMs: {
      flag: 'lease-ms', env: 'LEASE_MS', default: DEFAULT_LEASE_MS, parse: integer({ min: 100 }), value: 'N',
      help: "Postgres: how long a dead process's agents wait before another takes them over",
    },
    readOnly: {
      flag: 'read-only', env: 'DURABLE_AGENTS_READ_ONLY', default: false, parse: onOff, value: '',
      help: 'serve the stored agents, run none, answer every write 503 read_only (e.g. a SQLite file another serve runs)',
    },
  },
  llm: {
    baseUrl: {
      flag: 'llm-base-url', env: 'OPENAI_BASE_URL', default: undefined, parse: text, value: 'URL',
      help: 'an OpenAI-compatible API', defaultText: "unset: OpenAI's when a key is set",
    },
    apiKey: {
      flag: 'llm-api-key', env: 'OPENAI_API_KEY', default: undefined, parse: text, value: 'KEY',
      help: 'its API key', defaultText: 'unset; with no key and no URL, a simulated LLM answers',
    },
    model: { flag: 'model', env: 'OPENAI_MODEL', default: DEFAULT_AGENT_DEFAULTS.model, parse: text, value: 'NAME', help: "agents' model unless their input names one" },
    timeoutMs: {
      flag: 'llm-timeout-ms', env: 'LLM_TIMEOUT_MS', default: DEFAULT_AGENT_DEFAULTS.timeoutMs, parse: integer(), value: 'N',
      help: 'time limit of one LLM call',
    },
    simulatedFaultRate: {
      flag: 'simulated-fault-rate', env: 'SIMULATED_FAULT_RATE', default: 0, parse: nonNegativeNumber, value: 'R',
      help: "share of the simulated LLM's calls that fail (transiently)",
    },
    simulatedWordDelayMs: {
      flag: 'simulated-word-delay-ms', env: 'SIMULATED_WORD_DELAY_MS', default: 30, parse: integer(), value: 'N',
      help: 'pause between the words the simulated LLM streams',
    },
  },
  agent: {
    maxAttempts: {
      flag: 'max-attempts', env: 'MAX_ATTEMPTS', default: DEFAULT_AGENT_DEFAULTS.maxAttempts, parse: integer(), value: 'N',
      help: 'calls per step (LLM or webhook) before an agent waits in failed',
    },
    baseDelayMs: {
      flag: 'retry-base-ms', env: 'RETRY_BASE_MS', default: DEFAULT_AGENT_DEFAULTS.baseDelayMs, parse: integer(), value: 'N',
      help: 'first retry delay; doubles at each attempt, with jitter',
    },
    webhookTimeoutMs: {
      flag: 'webhook-timeout-ms', env: 'WEBHOOK_TIMEOUT_MS', default: DEFAULT_AGENT_DEFAULTS.webhookTimeoutMs, parse: integer({ min: 1 }), value: 'N',
      help: 'time limit of one webhook delivery', defaultText: 'unset: --llm-timeout-ms',
    },
    prices: {
      flag: 'llm-prices', env: 'LLM_PRICES', default: undefined, parse: modelPrices, value: 'LIST',
      help: "models' prices, MODEL=IN/OUT comma-separated (dollars per million input and output tokens), for agents' budgets in dollars",
      defaultText: 'unset: no price known (a budget in dollars is refused)',
    },
  },
  outbound: {
    allow: {
      flag: 'allow-outbound', env: 'DURABLE_AGENTS_ALLOW_OUTBOUND', default: parseOutboundPolicy(undefined), parse: outboundPolicy, value: 'LIST',
      help: 'the only hosts (a.com, *.a.com for its subdomains), IPs and CIDR blocks, comma-separated, webhooks and HTTP tools may reach',
      defaultText: 'unset: any but link-local and cloud-metadata addresses',
    },
  },
  runtime: {
    passivateAfterMs: {
      flag: 'passivate-after-ms', env: 'PASSIVATE_AFTER_MS', default: SERVER_PASSIVATE_AFTER_MS, parse: integer(), value: 'N',
      help: 'agents resting this long leave memory until their next event (0: never)',
    },
  },
  flow: {
    llmConcurrency: {
      flag: 'llm-concurrency', env: 'LLM_CONCURRENCY', default: DEFAULT_LLM_CONCURRENCY, parse: integer({ min: 1 }), value: 'N',
      help: 'LLM calls in flight at once, for all agents together; it adapts down when the provider answers 429, and back up',
    },
    llmRpm: {
      flag: 'llm-rpm', env: 'LLM_RPM', default: undefined, parse: integer({ min: 1 }), value: 'N',
      help: 'LLM requests per minute, evenly spaced', defaultText: 'unset: no limit',
    },
    llmTpm: {
      flag: 'llm-tpm', env: 'LLM_TPM', default: undefined, parse: integer({ min: 1 }), value: 'N',
      help: 'LLM tokens per minute (estimated when a call starts, corrected by its reported usage)', defaultText: 'unset: no limit',
    },
    maxInbox: {
      flag: 'max-inbox', env: 'MAX_INBOX', default: DEFAULT_MAX_INBOX, parse: integer({ min: 1 }), value: 'N',
      help: "events waiting in one agent's inbox; beyond it a send gets 429 inbox_full with Retry-After",
    },
  },
  retention: {
    keepCheckpoints: {
      flag: 'keep-checkpoints', env: 'DURABLE_AGENTS_KEEP_CHECKPOINTS', default: 0, parse: integer(), value: 'N',
      help: "keep each agent's newest N checkpoints (and their action-log rows); older ones are pruned in the background (0: keep all)",
    },
    keepDays: {
      flag: 'keep-days', env: 'DURABLE_AGENTS_KEEP_DAYS', default: 0, parse: nonNegativeNumber, value: 'D',
      help: 'keep the checkpoints of the last D days; with --keep-checkpoints too, a checkpoint either keeps is kept (0: keep all)',
    },
    keepFinishedDays: {
      flag: 'keep-finished-days', env: 'DURABLE_AGENTS_KEEP_FINISHED_DAYS', default: 0, parse: nonNegativeNumber, value: 'D',
      help: 'delete agents that ended (done or stopped) D days ago, with everything of theirs (0: keep them)',
    },
  },
  log: {
    level: { flag: 'log-level', env: 'LOG_LEVEL', default: DEFAULT_LOG_LEVEL, parse: oneOf(LOG_LEVELS), value: 'LEVEL', help: LOG_LEVELS.join(', ') },
    format: {
      flag: 'log-format', env: 'LOG_FORMAT', default: 'auto', parse: oneOf(LOG_FORMATS), value: 'auto|pretty|json',
      help: 'auto: readable lines on a terminal, JSON lines when piped',
    },
  },
};

// `--inspect` alone or `=true`: the default port; `=PORT`: that port; env `false`: off.
export const INSPECT_OPTION: Option<number | undefined> = {
  flag: 'inspect', env: 'DURABLE_AGENTS_INSPECT', default: undefined, parse: inspectPort(DEFAULT_INSPECT_PORT), value: '[=PORT]',
  help: `stream every agent to Stately's inspector, a page on http://localhost:PORT/ (bare: port ${DEFAULT_INSPECT_PORT})`, defaultText: 'off',
};

export const CONFIG_FILE_OPTION: Option<string | undefined> = {
  flag: 'config', env: 'DURABLE_AGENTS_CONFIG', default: undefined, parse: text, value: 'FILE',
  help: 'a .js, .mjs or .ts module (from the working directory) whose default export adds machines and code tools', defaultText: 'unset',
};

/**
 * Repeatable: each `--mcp` adds a server; given once or more, the flags replace the variable, whose
 * entries are separated by `;`. A URL (http://, https://) is a streamable HTTP server; anything else
 * a command line split on whitespace (no quoting: a config file's `mcpServers` says anything more).
 */
export const MCP_OPTION: Option<Record<string, McpServerConfig> | undefined> = {
  flag: 'mcp', env: 'DURABLE_AGENTS_MCP', default: undefined,
  parse: (raw, flag) => mcpServers(raw.split(';').map((entry) => entry.trim()).filter((entry) => entry !== ''), flag),
  value: 'NAME=COMMAND|URL',
  help: 'an MCP server whose tools agents may be offered (input "mcp": ["NAME"]): a URL, else a command split on whitespace; repeatable (the env var: entries separated by ;)',
  defaultText: 'none',
};

/** Every option, flat, in the table's order (for parsing and `--help`). */
export const ALL_OPTIONS: readonly Option<unknown>[] = [
  ...Object.values(OPTIONS).flatMap((section: Record<string, Option<unknown>>) => Object.values(section)),
  INSPECT_OPTION,
  CONFIG_FILE_OPTION,
  MCP_OPTION,
];

export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Config {
  const bare = new Set(ALL_OPTIONS.filter(takesNoValue).map((o) => `--${o.flag}`));
  const { values } = parseArgs({
    // Like node's own --inspect[=PORT]: a bare switch takes no value, so "--inspect --port 1" works.
    args: argv.map((arg) => (bare.has(arg) ? `${arg}=true` : arg)),
    options: Object.fromEntries(ALL_OPTIONS.map((o) => [o.flag, { type: 'string' as const, multiple: o === MCP_OPTION }])),
    strict: true,
    allowPositionals: false,
  });
  const read = <T>(option: Option<T>): T => {
    const given = values[option.flag] as string | string[] | undefined;
    // `--mcp` is repeatable: its values are parsed together (a name given twice is refused).
    if (Array.isArray(given)) {
      if (given.some((entry) => entry === '')) throw new InvalidInputError(`--${option.flag} needs a value.`);
      return given.length === 0 ? option.default : (mcpServers(given, option.flag) as T);
    }
    const raw = given ?? nonEmpty(env[option.env]);
    if (raw === undefined) return option.default;
    // `--token ""` must not silently turn authentication off (nor `--db ""` open a temporary database).
    if (raw === '') throw new InvalidInputError(`--${option.flag} needs a value.`);
    return option.parse(raw, option.flag);
  };
  const section = <S>(options: { [K in keyof S]: Option<S[K]> }): S =>
    Object.fromEntries(Object.entries<Option<unknown>>(options).map(([key, option]) => [key, read(option)])) as S;
  return {
    server: section(OPTIONS.server),
    store: section(OPTIONS.store),
    llm: section(OPTIONS.llm),
    agent: section(OPTIONS.agent),
    outbound: section(OPTIONS.outbound),
    runtime: section(OPTIONS.runtime),
    flow: section(OPTIONS.flow),
    retention: section(OPTIONS.retention),
    log: section(OPTIONS.log),
    inspect: read(INSPECT_OPTION),
    configFile: read(CONFIG_FILE_OPTION),
    mcp: read(MCP_OPTION) ?? {},
  };
}

/** The reference agent's defaults as this server sets them: the LLM's model and time limit, the retry policy. */
export function agentDefaults(config: Config): Partial<AgentDefaults> {
  return {
    model: config.llm.model,
    timeoutMs: config.llm.timeoutMs,
    maxAttempts: config.agent.maxAttempts,
    baseDelayMs: config.agent.baseDelayMs,
    ...(config.agent.webhookTimeoutMs === undefined ? {} : { webhookTimeoutMs: config.agent.webhookTimeoutMs }),
    ...(config.agent.prices === undefined ? {} : { prices: config.agent.prices }),
  };
}

/** A switch (`--read-only`) or a flag whose value is optional (`--inspect[=PORT]`): it may stand alone. */
export function takesNoValue(option: Option<unknown>): boolean {
  return option.value === '' || option.value.startsWith('[');
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
