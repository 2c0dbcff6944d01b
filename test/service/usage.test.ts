import { describe, expect, it } from 'vitest';
import { ALL_OPTIONS } from '../../src/service/config.js';
import { usage } from '../../src/service/usage.js';

/** The contract's "durable-agents serve flags" table: flag, env var, how its default reads. */
const CONTRACT: [string, string, RegExp][] = [
  ['--port N', 'PORT', /default: 3000\]/],
  ['--host H', 'HOST', /default: 127\.0\.0\.1\]/],
  ['--db PATH', 'DURABLE_AGENTS_DB', /default: \.\/data\/agents\.db\]/],
  ['--database-url URL', 'DATABASE_URL', /default: unset\]/],
  ['--llm-base-url URL', 'OPENAI_BASE_URL', /default: unset: OpenAI's when a key is set\]/],
  ['--llm-api-key KEY', 'OPENAI_API_KEY', /default: unset; .*simulated LLM answers\]/],
  ['--model NAME', 'OPENAI_MODEL', /default: gpt-4o-mini\]/],
  ['--llm-timeout-ms N', 'LLM_TIMEOUT_MS', /default: 30000\]/],
  ['--max-attempts N', 'MAX_ATTEMPTS', /default: 5\]/],
  ['--retry-base-ms N', 'RETRY_BASE_MS', /default: 500\]/],
  ['--token T', 'DURABLE_AGENTS_TOKEN', /default: unset: no authentication\]/],
  ['--lease-ms N', 'LEASE_MS', /default: 10000\]/],
];

describe('usage', () => {
  const lines = usage().split('\n');
  const lineOf = (flag: string) => lines.find((l) => l.trimStart().startsWith(`${flag} `));

  it.each(CONTRACT)('lists %s with %s and the contract’s default', (flag, env, fallback) => {
    const line = lineOf(flag);
    expect(line, flag).toBeDefined();
    expect(line!.split(/\s{2,}/).map((cell) => cell.trim())).toContain(env);
    expect(line).toMatch(fallback);
  });

  it('lists every flag the config reads, each with its variable and a default in words', () => {
    for (const option of ALL_OPTIONS) {
      const line = lines.find((l) => l.trimStart().startsWith(`--${option.flag}`));
      expect(line, option.flag).toContain(option.env);
      expect(line, option.flag).toMatch(/\[default: [^\]]/);
    }
    expect(usage()).not.toContain('undefined');
    expect(lineOf('--log-format auto|pretty|json')).toMatch(/LOG_FORMAT\s+auto: readable lines on a terminal, JSON lines when piped \[default: auto\]/);
    expect(lines.find((l) => l.trimStart().startsWith('--inspect[=PORT]'))).toContain('DURABLE_AGENTS_INSPECT');
    expect(lineOf('--allow-outbound LIST')).toMatch(/DURABLE_AGENTS_ALLOW_OUTBOUND\s+.*webhooks and HTTP tools may reach \[default: unset: any but link-local and cloud-metadata addresses\]/);
  });
});
