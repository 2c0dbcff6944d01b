/**
 * A machine in the form Stately's editor imports ("Import from code"): a `createMachine({...})`
 * call whose argument is the machine's config as JSON. The config references its actions, guards
 * and actors by name; what cannot be written as JSON is handled so the chart stays whole:
 *
 * - data mappers (`context` factory, invoke `input`, action/guard `params`, `output`) are left
 *   out: they compute values, they draw nothing;
 * - any other function (an inline action, guard or delay) becomes its name, the way XState and
 *   Stately's inspector name it (`xstate.assign` for an inline `assign`);
 * - an inline actor (`src: fromPromise(...)`) becomes the invoke's `id`;
 * - values under secret-looking keys (see redact.ts) are redacted: a literal initial `context`
 *   with an API key must not end up in a pasted diagram.
 */
import type { AnyStateMachine } from 'xstate';
import { CONFIG_NAME_MAPS, isSecretKey, REDACTED } from './redact.js';

const DATA_MAPPERS = new Set(['context', 'input', 'params', 'output']);

export function toStatelyCode(machine: AnyStateMachine): string {
  return `createMachine(${JSON.stringify(statelyConfig(machine), null, 2)})\n`;
}

/** The machine's config as plain JSON, ready for Stately's editor. */
export function statelyConfig(machine: AnyStateMachine): Record<string, unknown> {
  return convert(machine.config, undefined, undefined, false) as Record<string, unknown>;
}

/** `isName`: `key` names a state, an event type or a delay (it sits under `states`, `on`, `after`), so it is no secret. */
function convert(value: unknown, key: string | undefined, owner: Record<string, unknown> | undefined, isName: boolean): unknown {
  if (key !== undefined && !isName && isSecretKey(key) && value !== undefined && value !== null) return REDACTED;
  if (typeof value === 'function') {
    if (key !== undefined && DATA_MAPPERS.has(key)) return undefined;
    const type = (value as { type?: unknown }).type;
    return typeof type === 'string' ? type : value.name || 'inline';
  }
  if (value === null || typeof value !== 'object') return typeof value === 'bigint' || typeof value === 'symbol' ? undefined : value;
  if (key === 'src' && isActorLogic(value)) return typeof owner?.id === 'string' ? owner.id : 'inline';
  if (Array.isArray(value)) return value.map((item) => convert(item, undefined, undefined, false)).filter((item) => item !== undefined);
  const source = value as Record<string, unknown>;
  const namesHere = key !== undefined && !isName && CONFIG_NAME_MAPS.has(key);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(source)) {
    const converted = convert(v, k, source, namesHere);
    if (converted !== undefined) out[k] = converted;
  }
  return out;
}

function isActorLogic(value: object): boolean {
  return typeof (value as { transition?: unknown }).transition === 'function';
}
