import { createActor, fromPromise } from 'xstate';
import { describe, expect, it, vi } from 'vitest';
import { createAgentMachine, DEFAULT_AGENT_DEFAULTS } from '../../src/agents/reference/machine.js';
import type { AgentInput, EffectRequest, EffectResult, LlmAnswer, LlmRequest } from '../../src/agents/reference/types.js';
import { COMMITTED_EVENT } from '../../src/durable/commit-barrier.js';
import { parseOutboundPolicy } from '../../src/core/outbound.js';
import { textAnswer } from '../../src/llm/client.js';
import { agentDefaults, DEFAULT_INSPECT_PORT, loadConfig, type Config } from '../../src/service/config.js';
import { DEFAULT_LEASE_MS } from '../../src/store/postgres/postgres-store.js';

describe('loadConfig defaults', () => {
  it('are the contract table’s, grouped by concern', () => {
    expect(loadConfig([], {})).toEqual({
      server: { port: 3000, host: '127.0.0.1', token: undefined },
      store: { db: './data/agents.db', databaseUrl: undefined, synchronous: 'full', leaseMs: 10_000, readOnly: false },
      llm: { baseUrl: undefined, apiKey: undefined, model: 'gpt-4o-mini', timeoutMs: 30_000, simulatedFaultRate: 0, simulatedWordDelayMs: 30 },
      agent: { maxAttempts: 5, baseDelayMs: 500, webhookTimeoutMs: undefined, prices: undefined },
      outbound: { allow: parseOutboundPolicy(undefined) },
      runtime: { passivateAfterMs: 60_000 },
      flow: { llmConcurrency: 16, llmRpm: undefined, llmTpm: undefined, maxInbox: 1000 },
      retention: { keepCheckpoints: 0, keepDays: 0, keepFinishedDays: 0 },
      log: { level: 'info', format: 'auto' },
      inspect: undefined,
      configFile: undefined,
      mcp: {},
    } satisfies Config);
  });

  it('are the library’s own where it has one, not a second copy', () => {
    const config = loadConfig([], {});
    expect(config.llm.model).toBe(DEFAULT_AGENT_DEFAULTS.model);
    expect(config.llm.timeoutMs).toBe(DEFAULT_AGENT_DEFAULTS.timeoutMs);
    expect(config.agent.maxAttempts).toBe(DEFAULT_AGENT_DEFAULTS.maxAttempts);
    expect(config.agent.baseDelayMs).toBe(DEFAULT_AGENT_DEFAULTS.baseDelayMs);
    expect(config.store.leaseMs).toBe(DEFAULT_LEASE_MS);
  });
});

/** [flag, env var, the text given, where it lands, the value read]. */
const SETTINGS: [string, string, string, (c: Config) => unknown, unknown][] = [
  ['port', 'PORT', '8081', (c) => c.server.port, 8081],
  ['host', 'HOST', '0.0.0.0', (c) => c.server.host, '0.0.0.0'],
  ['token', 'DURABLE_AGENTS_TOKEN', 's3cret', (c) => c.server.token, 's3cret'],
  ['db', 'DURABLE_AGENTS_DB', '/var/lib/agents.db', (c) => c.store.db, '/var/lib/agents.db'],
  ['database-url', 'DATABASE_URL', 'postgres://pg@db/agents', (c) => c.store.databaseUrl, 'postgres://pg@db/agents'],
  ['synchronous', 'DURABLE_AGENTS_SYNCHRONOUS', 'normal', (c) => c.store.synchronous, 'normal'],
  ['lease-ms', 'LEASE_MS', '2000', (c) => c.store.leaseMs, 2_000],
  ['keep-checkpoints', 'DURABLE_AGENTS_KEEP_CHECKPOINTS', '50', (c) => c.retention.keepCheckpoints, 50],
  ['keep-days', 'DURABLE_AGENTS_KEEP_DAYS', '7.5', (c) => c.retention.keepDays, 7.5],
  ['keep-finished-days', 'DURABLE_AGENTS_KEEP_FINISHED_DAYS', '30', (c) => c.retention.keepFinishedDays, 30],
  ['llm-base-url', 'OPENAI_BASE_URL', 'http://llm.test/v1', (c) => c.llm.baseUrl, 'http://llm.test/v1'],
  ['llm-api-key', 'OPENAI_API_KEY', 'sk-test', (c) => c.llm.apiKey, 'sk-test'],
  ['model', 'OPENAI_MODEL', 'gpt-x', (c) => c.llm.model, 'gpt-x'],
  ['llm-timeout-ms', 'LLM_TIMEOUT_MS', '1234', (c) => c.llm.timeoutMs, 1_234],
  ['simulated-fault-rate', 'SIMULATED_FAULT_RATE', '0.25', (c) => c.llm.simulatedFaultRate, 0.25],
  ['simulated-word-delay-ms', 'SIMULATED_WORD_DELAY_MS', '0', (c) => c.llm.simulatedWordDelayMs, 0],
  ['max-attempts', 'MAX_ATTEMPTS', '9', (c) => c.agent.maxAttempts, 9],
  ['retry-base-ms', 'RETRY_BASE_MS', '20', (c) => c.agent.baseDelayMs, 20],
  ['webhook-timeout-ms', 'WEBHOOK_TIMEOUT_MS', '700', (c) => c.agent.webhookTimeoutMs, 700],
  [
    'llm-prices', 'LLM_PRICES', 'gpt-4o-mini=0.15/0.6, meta-llama/Llama-3=0/0',
    (c) => c.agent.prices,
    { 'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 }, 'meta-llama/Llama-3': { inputPerMTok: 0, outputPerMTok: 0 } },
  ],
  ['allow-outbound', 'DURABLE_AGENTS_ALLOW_OUTBOUND', 'Hooks.example.com,*.example.org,10.0.0.0/8', (c) => String(c.outbound.allow), 'hooks.example.com,*.example.org,10.0.0.0/8'],
  ['passivate-after-ms', 'PASSIVATE_AFTER_MS', '0', (c) => c.runtime.passivateAfterMs, 0],
  ['llm-concurrency', 'LLM_CONCURRENCY', '4', (c) => c.flow.llmConcurrency, 4],
  ['llm-rpm', 'LLM_RPM', '600', (c) => c.flow.llmRpm, 600],
  ['llm-tpm', 'LLM_TPM', '90000', (c) => c.flow.llmTpm, 90_000],
  ['max-inbox', 'MAX_INBOX', '50', (c) => c.flow.maxInbox, 50],
  ['log-level', 'LOG_LEVEL', 'silent', (c) => c.log.level, 'silent'],
  ['log-format', 'LOG_FORMAT', 'json', (c) => c.log.format, 'json'],
];

describe('loadConfig flags and environment variables', () => {
  it.each(SETTINGS)('--%s and %s set the same setting', (flag, env, raw, at, expected) => {
    expect(at(loadConfig([`--${flag}`, raw], {}))).toEqual(expected);
    expect(at(loadConfig([`--${flag}=${raw}`], {}))).toEqual(expected);
    expect(at(loadConfig([], { [env]: raw }))).toEqual(expected);
  });

  it('takes the flag over the environment, and an empty variable as unset', () => {
    expect(loadConfig(['--port', '1'], { PORT: '2' }).server.port).toBe(1);
    expect(loadConfig([], { PORT: '', OPENAI_MODEL: '' })).toMatchObject({ server: { port: 3000 }, llm: { model: 'gpt-4o-mini' } });
  });

  it('refuses an empty flag rather than turning a setting off', () => {
    expect(() => loadConfig(['--token', ''], {})).toThrow('--token needs a value.');
    expect(() => loadConfig(['--db='], {})).toThrow('--db needs a value.');
  });

  it('refuses bad values with a sentence that names the flag, also when they come from the environment', () => {
    const refusals: [string[], NodeJS.ProcessEnv, string][] = [
      [['--port', 'eighty'], {}, '--port must be a non-negative integer (got "eighty").'],
      [['--port', '70000'], {}, '--port must be 0–65535 (got 70000).'],
      [[], { PORT: '-1' }, '--port must be a non-negative integer (got "-1").'],
      [['--max-attempts', '2.5'], {}, '--max-attempts must be a non-negative integer (got "2.5").'],
      [['--simulated-fault-rate', 'often'], {}, '--simulated-fault-rate must be a non-negative number (got "often").'],
      [['--lease-ms', '50'], {}, '--lease-ms must be at least 100 (got 50).'],
      [['--webhook-timeout-ms', '0'], {}, '--webhook-timeout-ms must be at least 1 (got 0).'],
      [['--llm-prices', 'gpt-4o=2.5'], {}, '--llm-prices takes MODEL=IN/OUT entries, comma-separated: dollars per million input and output tokens, e.g. gpt-4o-mini=0.15/0.6 (got "gpt-4o=2.5").'],
      [[], { LLM_PRICES: 'a=1/2,a=3/4' }, '--llm-prices names the model "a" twice.'],
      [['--llm-prices', '=1/2'], {}, '--llm-prices takes MODEL=IN/OUT entries'],
      [['--llm-prices', 'a=-1/2'], {}, '--llm-prices takes MODEL=IN/OUT entries'],
      [['--synchronous', 'off'], {}, '--synchronous must be "normal" or "full" (got "off").'],
      [[], { DATABASE_URL: 'mysql://root@db/agents' }, '--database-url must be a postgres:// (or postgresql://) URL.'],
      [[], { LOG_LEVEL: 'loud' }, '--log-level must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent" (got "loud").'],
      [[], { LOG_FORMAT: 'xml' }, '--log-format must be one of "auto", "pretty", "json" (got "xml").'],
      [['--allow-outbound', '10.0.0.1/8'], {}, '--allow-outbound: The outbound allow-list entry "10.0.0.1/8" has bits set after its prefix (the block is 10.0.0.0/8).'],
      [[], { DURABLE_AGENTS_ALLOW_OUTBOUND: 'a.com,,b.com' }, '--allow-outbound: The outbound allow-list entry "" is empty (entries are separated by single commas).'],
    ];
    for (const [argv, env, message] of refusals) expect(() => loadConfig(argv, env), message).toThrow(message);
    expect(loadConfig(['--database-url', 'postgresql://pg@db/agents'], {}).store.databaseUrl).toBe('postgresql://pg@db/agents');
  });

  it('refuses a flag it does not know, and a positional argument', () => {
    expect(() => loadConfig(['--bogus'], {})).toThrow(/Unknown option '--bogus'/);
    expect(() => loadConfig(['extra'], {})).toThrow(/Unexpected argument 'extra'/);
  });
});

describe('--inspect[=PORT] and DURABLE_AGENTS_INSPECT', () => {
  it('reads like node --inspect: bare is the default port, =PORT a port, env true/false/PORT', () => {
    expect(loadConfig([], {}).inspect).toBeUndefined();
    expect(loadConfig(['--inspect'], {}).inspect).toBe(DEFAULT_INSPECT_PORT);
    expect(loadConfig(['--inspect', '--port', '1'], {})).toMatchObject({ inspect: DEFAULT_INSPECT_PORT, server: { port: 1 } });
    expect(loadConfig(['--inspect=9229'], {}).inspect).toBe(9229);
    expect(loadConfig([], { DURABLE_AGENTS_INSPECT: 'true' }).inspect).toBe(DEFAULT_INSPECT_PORT);
    expect(loadConfig([], { DURABLE_AGENTS_INSPECT: '9230' }).inspect).toBe(9230);
    expect(loadConfig([], { DURABLE_AGENTS_INSPECT: 'false' }).inspect).toBeUndefined();
    expect(loadConfig(['--inspect=9231'], { DURABLE_AGENTS_INSPECT: 'false' }).inspect).toBe(9231); // the flag wins
    for (const bad of ['--inspect=0', '--inspect=70000', '--inspect=abc', '--inspect=']) {
      expect(() => loadConfig([bad], {})).toThrow(/--inspect/);
    }
    expect(() => loadConfig(['--inspect', '9229'], {})).toThrow(/Unexpected argument '9229'/);
  });
});

describe('--read-only and DURABLE_AGENTS_READ_ONLY', () => {
  it('is a switch: bare or =true on, =false off (over the env var), env 1/true/0/false', () => {
    expect(loadConfig([], {}).store.readOnly).toBe(false);
    expect(loadConfig(['--read-only'], {}).store.readOnly).toBe(true);
    expect(loadConfig(['--read-only', '--port', '1'], {})).toMatchObject({ store: { readOnly: true }, server: { port: 1 } });
    expect(loadConfig([], { DURABLE_AGENTS_READ_ONLY: '1' }).store.readOnly).toBe(true);
    expect(loadConfig([], { DURABLE_AGENTS_READ_ONLY: 'true' }).store.readOnly).toBe(true);
    expect(loadConfig([], { DURABLE_AGENTS_READ_ONLY: '0' }).store.readOnly).toBe(false);
    expect(loadConfig(['--read-only=false'], { DURABLE_AGENTS_READ_ONLY: '1' }).store.readOnly).toBe(false);
    expect(() => loadConfig(['--read-only=yes'], {})).toThrow('--read-only takes no value, or =true or =false (got "yes").');
    expect(() => loadConfig(['--read-only', 'true'], {})).toThrow(/Unexpected argument 'true'/);
  });
});

describe('--allow-outbound and DURABLE_AGENTS_ALLOW_OUTBOUND', () => {
  it('unset, allow any host but link-local and cloud-metadata addresses; set, only what they list', () => {
    const unset = loadConfig([], {}).outbound.allow;
    expect(() => unset.checkUrl('http://hooks.example.com/')).not.toThrow();
    expect(() => unset.checkUrl('http://169.254.169.254/')).toThrow(/not allowed/);
    const listed = loadConfig(['--allow-outbound', '*.example.com'], {}).outbound.allow;
    expect(() => listed.checkUrl('http://hooks.example.com/')).not.toThrow();
    expect(() => listed.checkUrl('http://127.0.0.1/')).toThrow('Outbound requests to "127.0.0.1" are not allowed: the address is not in the allow-list.');
  });
});

describe('agentDefaults', () => {
  it('hands the reference agent the LLM’s model and time limit and the retry policy, under the agent’s names', () => {
    const config = loadConfig(['--model', 'm', '--llm-timeout-ms', '900', '--max-attempts', '2', '--retry-base-ms', '30'], {});
    expect(agentDefaults(config)).toEqual({ model: 'm', timeoutMs: 900, maxAttempts: 2, baseDelayMs: 30 });
    expect(agentDefaults(loadConfig(['--webhook-timeout-ms', '700'], {}))).toMatchObject({ webhookTimeoutMs: 700 });
    expect(agentDefaults(loadConfig(['--llm-prices', 'm=1/2'], {}))).toMatchObject({ prices: { m: { inputPerMTok: 1, outputPerMTok: 2 } } });
  });

  /** The time limits an agent of these server defaults gives its LLM call and its webhook delivery. */
  async function timeLimits(config: Config, input: AgentInput = {}): Promise<{ llm?: number; webhook?: number }> {
    const seen: { llm?: number; webhook?: number } = {};
    const machine = createAgentMachine({ ...DEFAULT_AGENT_DEFAULTS, ...agentDefaults(config) }).provide({
      actors: {
        callLlm: fromPromise<LlmAnswer, LlmRequest>(async ({ input }) => {
          seen.llm = input.timeoutMs;
          return textAnswer('an answer');
        }),
        runSideEffect: fromPromise<EffectResult, EffectRequest>(async ({ input }) => {
          seen.webhook = input.timeoutMs;
          return { delivered: true, idempotencyKey: 'k' };
        }),
      },
    });
    const actor = createActor(machine, { input: { tasks: ['t1'], webhook: 'http://hook.test/', ...input } }).start();
    try {
      await vi.waitFor(() => expect(actor.getSnapshot().value).toBe('persisted'), { interval: 5 });
      actor.send({ type: COMMITTED_EVENT });
      await vi.waitFor(() => expect(actor.getSnapshot().value).toBe('idle'), { interval: 5 });
      return seen;
    } finally {
      actor.stop();
    }
  }

  it('bounds the webhook by --webhook-timeout-ms when set, else by the LLM’s timeout; a spawn’s retry.timeoutMs bounds both', async () => {
    expect(await timeLimits(loadConfig(['--llm-timeout-ms', '900'], {}))).toEqual({ llm: 900, webhook: 900 });
    expect(await timeLimits(loadConfig(['--llm-timeout-ms', '900', '--webhook-timeout-ms', '700'], {}))).toEqual({ llm: 900, webhook: 700 });
    expect(await timeLimits(loadConfig(['--webhook-timeout-ms', '700'], {}), { retry: { timeoutMs: 5_000 } })).toEqual({ llm: 5_000, webhook: 5_000 });
  });
});
