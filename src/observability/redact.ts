/**
 * Secret redaction for anything that leaves the process for a person to look at (the Stately
 * inspector, the Stately editor export). By key name: a value under `apiKey`, `accessToken`,
 * `client_secret`, `password`, `Authorization`… is replaced, whatever it holds.
 */

export const REDACTED = '[redacted]';

/** Normalized key endings that name a secret ("maxTokens" ends in "tokens", so it is not one). */
const SECRET_ENDINGS = ['apikey', 'token', 'secret', 'password', 'passwd', 'authorization', 'cookie', 'credentials', 'privatekey'];

export function isSecretKey(key: string): boolean {
  const normalized = key.toLowerCase().replace(/[-_.\s]/g, '');
  return SECRET_ENDINGS.some((ending) => normalized.endsWith(ending));
}

/** Deeper than this is cut: inspection data is for eyes, and actor refs can nest a whole system. */
const MAX_DEPTH = 12;

export interface RedactOptions {
  /**
   * Keys whose children are named by the user, not data: state names under `states`, event types
   * under `on`. A state called "token" is not a secret, and redacting it would break the chart.
   */
  nameMaps?: ReadonlySet<string>;
  /** Keys whose whole subtree is names (a snapshot's state `value`): copied without redaction. */
  verbatim?: ReadonlySet<string>;
}

/** Where statechart configs name things. */
export const CONFIG_NAME_MAPS: ReadonlySet<string> = new Set(['states', 'on', 'after']);

/**
 * A plain, structured-clone-safe copy of `value` with secrets replaced. Never throws and never
 * mutates its input: it runs on live XState snapshots, and on `undefined` (the "context" of a
 * promise actor, which crashed a careless sanitizer). Objects with `toJSON` (actor refs, dates)
 * are copied as they serialize; functions become `{type: name}` as Stately's own serializer does;
 * cycles and over-deep branches become markers.
 */
export function redactSecrets(value: unknown, options: RedactOptions = {}): unknown {
  return copy(value, 0, new Set(), options, 'data');
}

/** `data`: keys are checked; `names`: this object's own keys are names; `verbatim`: nothing below is checked. */
type Mode = 'data' | 'names' | 'verbatim';

function copy(value: unknown, depth: number, ancestors: Set<object>, options: RedactOptions, mode: Mode): unknown {
  if (typeof value === 'function') return { type: value.name || 'anonymous' };
  if (typeof value === 'symbol') return undefined;
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return value;
  if (ancestors.has(value)) return '[circular]';
  if (depth >= MAX_DEPTH) return '[too deep]';
  let source: unknown = value;
  try {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') source = toJSON.call(value);
    if (source === null || typeof source !== 'object') return copy(source, depth, ancestors, options, mode);
  } catch {
    return '[unserializable]';
  }
  ancestors.add(value);
  try {
    const childMode = (key: string): Mode =>
      mode === 'verbatim' || options.verbatim?.has(key) ? 'verbatim' : options.nameMaps?.has(key) ? 'names' : 'data';
    if (Array.isArray(source)) return source.map((item) => copy(item, depth + 1, ancestors, options, mode === 'verbatim' ? mode : 'data'));
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(source)) {
      const secret = mode === 'data' && isSecretKey(key) && item !== undefined && item !== null;
      const copied = secret ? REDACTED : copy(item, depth + 1, ancestors, options, childMode(key));
      if (copied !== undefined) out[key] = copied;
    }
    return out;
  } catch {
    return '[unserializable]'; // a getter that throws, a revoked proxy…
  } finally {
    ancestors.delete(value);
  }
}

/** Redacts a machine config given as JSON text (Stately's `definition`); what does not parse is dropped. */
export function redactConfigJson(text: string): string | undefined {
  try {
    return JSON.stringify(redactSecrets(JSON.parse(text), { nameMaps: CONFIG_NAME_MAPS }));
  } catch {
    return undefined;
  }
}
