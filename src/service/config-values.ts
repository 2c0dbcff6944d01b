// How one flag's text becomes its value. Every parser names the flag in its refusal, also when the
// text came from the environment variable: the flag is what `--help` lists.
import { InvalidInputError } from '../core/errors.js';
import { parseOutboundPolicy, type OutboundPolicy } from '../core/outbound.js';

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
