import { describe, expect, it } from 'vitest';
import { combineObservers } from '../../src/observability/combine-observers.js';

describe('combineObservers', () => {
  it('calls every observer even when one throws, then re-throws the first error for the runtime to log', () => {
    const seen: string[] = [];
    const combined = combineObservers(
      { batchCommitted: () => void seen.push('a') },
      undefined,
      {
        batchCommitted: () => {
          seen.push('b');
          throw new Error('broken observer');
        },
      },
      { batchCommitted: () => void seen.push('c'), agentFailed: () => void seen.push('failed') },
    );
    expect(() => combined.batchCommitted!({ size: 1, ms: 1 })).toThrow('broken observer');
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(combined.transitionCommitted).toBeUndefined(); // nobody asked for it: the runtime skips it
  });
});
