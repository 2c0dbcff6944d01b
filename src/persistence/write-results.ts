import type { AppendResult, WriteResult } from './store.js';

/** The result of a one-event commit, as `appendEvent` returns it (a refusal is thrown). */
export function unwrapAppend(results: readonly WriteResult[]): AppendResult {
  const result = results[0];
  if (result && 'refused' in result) throw result.refused;
  if (!result) throw new Error('The store returned no result for an event write.');
  return result;
}
