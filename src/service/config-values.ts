// How one flag's text becomes its value. Every parser names the flag in its refusal, also when the
// text came from the environment variable: the flag is what `--help` lists.
import { InvalidInputError } from '../core/errors.js';
import { parseOutboundPolicy, type OutboundPolicy } from '../core/outbound.js';
import { MCP_SERVER_NAME, type McpServerConfig } from '../mcp/types.js';

export type Parse<T> = (raw: string, flag: string) => T;

export const text: Parse<string> = (raw) => raw;

/** A whole number from `min` (default 0) to `max`. */
export function integer({ min = 0, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {}): Parse<number> {
  return (raw, flag) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0) throw new InvalidInputError(`--${flag} must be a non-negative integer (got "${raw}").`);
    if (n < min || n > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `${min}–${max}`;
      throw new InvalidInputError(`--${flag} must be ${range} (got ${n}).`);
    }
    return n;
  };
}

export const nonNegativeNumber: Parse<number> = (raw, flag) => {
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new InvalidInputError(`--${flag} must be a non-negative number (got "${raw}").`);
  return n;
};

export function oneOf<const T extends string>(choices: readonly T[]): Parse<T> {
  return (raw, flag) => {
    if ((choices as readonly string[]).includes(raw)) return raw as T;
    const listed = choices.map((c) => `"${c}"`);
    const words = listed.length === 2 ? listed.join(' or ') : `one of ${listed.join(', ')}`;
    throw new InvalidInputError(`--${flag} must be ${words} (got "${raw}").`);
  };
}

export const postgresUrl: Parse<string> = (raw, flag) => {
  if (!/^postgres(ql)?:\/\//i.test(raw)) throw new InvalidInputError(`--${flag} must be a postgres:// (or postgresql://) URL.`);
  return raw;
};

/** A switch: the bare flag (or `=true`, `1`) turns it on; `=false` (or `0`) off, e.g. to override its env var. */
export const onOff: Parse<boolean> = (raw, flag) => {
  const value = raw.trim().toLowerCase();
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new InvalidInputError(`--${flag} takes no value, or =true or =false (got "${raw}").`);
};

/** Like node's own `--inspect[=PORT]`: `true` is the default port, `false` is off, else a port. */
export function inspectPort(defaultPort: number): Parse<number | undefined> {
  return (raw, flag) => {
    const value = raw.trim().toLowerCase();
    if (value === 'true') return defaultPort;
    if (value === 'false') return undefined;
    const port = Number(value);
    if (!/^\d+$/.test(value) || port < 1 || port > 65_535) {
      throw new InvalidInputError(`--${flag} takes a port from 1 to 65535, as --${flag}=PORT (got "${raw}").`);
    }
    return port;
  };
}

/** A comma-separated outbound allow-list (hosts, `*.domain`, addresses, CIDR blocks). */
export const outboundPolicy: Parse<OutboundPolicy> = (raw, flag) => {
  try {
    return parseOutboundPolicy(raw);
  } catch (err) {
    if (err instanceof InvalidInputError) throw new InvalidInputError(`--${flag}: ${err.message}`);
    throw err;
  }
};

/**
 * One `--mcp NAME=COMMAND|URL`: a value starting with http:// or https:// is a streamable HTTP
 * endpoint; anything else is a command line, split on whitespace into the program and its
 * arguments (no quoting, no shell: a config file's `mcpServers` says anything more).
 */
export const mcpServerEntry: Parse<[string, McpServerConfig]> = (raw, flag) => {
  const at = raw.indexOf('=');
  const name = at < 0 ? '' : raw.slice(0, at).trim();
  const target = at < 0 ? '' : raw.slice(at + 1).trim();
  if (at < 0 || target === '') throw new InvalidInputError(`--${flag} takes NAME=COMMAND or NAME=URL (got "${raw}").`);
  if (!MCP_SERVER_NAME.test(name)) {
    throw new InvalidInputError(`--${flag}: "${name}" is not a server name (1 to 32 letters, digits, _ or -, without "__").`);
  }
  if (/^https?:\/\//i.test(target)) {
    if (!URL.canParse(target)) throw new InvalidInputError(`--${flag} ${name}: "${target}" is not a URL.`);
    return [name, { url: target }];
  }
  const [command, ...args] = target.split(/\s+/);
  return [name, args.length > 0 ? { command: command!, args } : { command: command! }];
};

/**
 * Every `--mcp` given (or `DURABLE_AGENTS_MCP`'s entries, separated by `;`), by name; a name given
 * twice is refused.
 */
export function mcpServers(entries: readonly string[], flag: string): Record<string, McpServerConfig> {
  const servers: Record<string, McpServerConfig> = {};
  for (const entry of entries) {
    const [name, config] = mcpServerEntry(entry, flag);
    if (Object.hasOwn(servers, name)) throw new InvalidInputError(`--${flag}: two servers are named "${name}".`);
    servers[name] = config;
  }
  return servers;
}

/**
 * Prices of models, `MODEL=IN/OUT` comma-separated: US dollars per million input (prompt) and output
 * (completion) tokens, e.g. `gpt-4o-mini=0.15/0.6,gpt-4o=2.5/10`. A model's name may hold `/` or `=`
 * (the last `=` ends it); a name given twice is refused.
 */
export const modelPrices: Parse<Record<string, { inputPerMTok: number; outputPerMTok: number }>> = (raw, flag) => {
  const prices: Record<string, { inputPerMTok: number; outputPerMTok: number }> = {};
  for (const entry of raw.split(',').map((e) => e.trim()).filter((e) => e !== '')) {
    const at = entry.lastIndexOf('=');
    const model = entry.slice(0, at).trim();
    const [input, output, ...rest] = entry.slice(at + 1).split('/').map((p) => p.trim());
    const price = (p: string | undefined) => (p !== undefined && p !== '' && Number.isFinite(Number(p)) && Number(p) >= 0 ? Number(p) : undefined);
    const inputPerMTok = price(input);
    const outputPerMTok = price(output);
    if (at <= 0 || model === '' || inputPerMTok === undefined || outputPerMTok === undefined || rest.length > 0) {
      throw new InvalidInputError(`--${flag} takes MODEL=IN/OUT entries, comma-separated: dollars per million input and output tokens, e.g. gpt-4o-mini=0.15/0.6 (got "${entry}").`);
    }
    if (Object.hasOwn(prices, model)) throw new InvalidInputError(`--${flag} names the model "${model}" twice.`);
    prices[model] = { inputPerMTok, outputPerMTok };
  }
  if (Object.keys(prices).length === 0) throw new InvalidInputError(`--${flag} needs at least one MODEL=IN/OUT entry.`);
  return prices;
};
