// The tools' concurrency limits on their own: first come first served, never past a limit, an
// aborted waiter out of the line, an idle pool dropped. Randomness is seeded.
import { describe, expect, it } from 'vitest';
import type { SharedToolSlots } from '../../src/core/shared-slots.js';
import { ToolLimits } from '../../src/core/tool-limits.js';

/** mulberry32: a seeded PRNG, so a failing order can be replayed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('ToolLimits', () => {
  it('runs at most `limit` calls of a pool at once, and starts the waiting ones in arrival order', async () => {
    const limits = new ToolLimits();
    const random = seeded(24);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const calls = Array.from({ length: 40 }, async (_, i) => {
      const release = await limits.acquire('pool', 'lookup', 3, `agent-${i % 7}`);
      started.push(i);
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 5)));
      running--;
      release();
    });
    await tick();
    expect(limits.loads()).toEqual([{ tool: 'lookup', waiting: 37, inFlight: 3 }]);
    await Promise.all(calls);
    expect(most).toBe(3);
    expect(started).toEqual(Array.from({ length: 40 }, (_, i) => i));
    // Idle: the pool is gone (nothing held for a tool no call uses).
    expect(limits.loads()).toEqual([]);
  });

  it('keeps pools apart, and says which agents wait', async () => {
    const limits = new ToolLimits();
    const a1 = await limits.acquire('a', 'a', 1, 'x');
    const b1 = await limits.acquire('b', 'b', 1, 'y');
    const a2 = limits.acquire('a', 'a', 1, 'z');
    await tick();
    expect(limits.isWaiting('z')).toBe(true);
    expect(limits.isWaiting('x')).toBe(false);
    expect(limits.isWaiting('y')).toBe(false);
    a1();
    a1(); // a second release gives nothing back twice
    (await a2)();
    expect(limits.isWaiting('z')).toBe(false);
    expect(limits.loads()).toEqual([{ tool: 'b', waiting: 0, inFlight: 1 }]);
    b1();
    expect(limits.loads()).toEqual([]);
  });

  it('takes an aborted waiter out of the line, rejecting with its reason, and lets the next one go', async () => {
    const limits = new ToolLimits();
    const first = await limits.acquire('p', 't', 1, 'one');
    const stop = new AbortController();
    const aborted = limits.acquire('p', 't', 1, 'two', stop.signal);
    const third = limits.acquire('p', 't', 1, 'three');
    await tick();
    expect(limits.loads()).toEqual([{ tool: 't', waiting: 2, inFlight: 1 }]);
    stop.abort(new Error('agent stopped'));
    await expect(aborted).rejects.toThrow('agent stopped');
    expect(limits.isWaiting('two')).toBe(false);
    expect(limits.loads()).toEqual([{ tool: 't', waiting: 1, inFlight: 1 }]);
    first();
    (await third)();
    expect(limits.loads()).toEqual([]);
    // An already aborted signal never enters the line.
    await expect(limits.acquire('p', 't', 1, 'four', AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
    expect(limits.loads()).toEqual([]);
  });

  it('lets each call keep its own limit, in line: the first waiter holds those behind it', async () => {
    const limits = new ToolLimits();
    const held = [await limits.acquire('url', 'x', 4, 'a'), await limits.acquire('url', 'x', 4, 'b')];
    // Limit 2 and two running: it waits, and the limit-4 call behind it does not overtake it.
    let strictStarted = false;
    let laxStarted = false;
    const strict = limits.acquire('url', 'x', 2, 'c').then((release) => ((strictStarted = true), release));
    const lax = limits.acquire('url', 'x', 4, 'd').then((release) => ((laxStarted = true), release));
    await tick();
    expect([strictStarted, laxStarted]).toEqual([false, false]);
    held[0]!();
    await tick();
    expect([strictStarted, laxStarted]).toEqual([true, true]);
    held[1]!();
    (await strict)();
    (await lax)();
    expect(limits.loads()).toEqual([]);
  });

  it('refuses a limit that is not a positive integer', async () => {
    const limits = new ToolLimits();
    await expect(limits.acquire('p', 't', 0, 'a')).rejects.toThrow(RangeError);
    await expect(limits.acquire('p', 't', 1.5, 'a')).rejects.toThrow(RangeError);
  });
});

/**
 * Store-wide slots in memory, as another process sees them: `held` is what the other processes
 * hold (the Postgres slots themselves are tested in test/runtime/shared-tool-limits.test.ts).
 */
function memorySlots(held: Set<number> = new Set()): SharedToolSlots & { held: Set<number>; down: boolean } {
  return {
    held,
    down: false,
    async tryTake(_pool, limit) {
      if (this.down) throw new Error('database unreachable');
      for (let slot = 0; slot < limit; slot++) {
        if (!held.has(slot)) {
          held.add(slot);
          return slot;
        }
      }
      return undefined;
    },
    async renew() {},
    async give(_pool, slot) {
      held.delete(slot);
    },
  };
}

describe('ToolLimits with store-wide slots', () => {
  it('waits for a slot the other processes hold, counted as waiting, and gives it back on release', async () => {
    const limits = new ToolLimits();
    const slots = memorySlots(new Set([0])); // another process runs the tool's one call
    let started = false;
    const call = limits.acquire('url', 'lookup', 1, 'a', undefined, { slots, pool: 'http url' }).then((release) => ((started = true), release));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(started).toBe(false);
    expect(limits.isWaiting('a')).toBe(true);
    expect(limits.loads()).toEqual([{ tool: 'lookup', waiting: 1, inFlight: 0 }]);
    slots.held.delete(0); // the other process's call ends
    const release = await call;
    expect(limits.isWaiting('a')).toBe(false);
    expect(limits.loads()).toEqual([{ tool: 'lookup', waiting: 0, inFlight: 1 }]);
    expect([...slots.held]).toEqual([0]);
    release();
    release();
    await tick();
    expect([...slots.held]).toEqual([]);
    expect(limits.loads()).toEqual([]);
  });

  it('an abort while waiting for a slot leaves the line here too; a database out of reach lets the call go within this process', async () => {
    const limits = new ToolLimits();
    const slots = memorySlots(new Set([0]));
    const stop = new AbortController();
    const waiting = limits.acquire('url', 'lookup', 1, 'a', stop.signal, { slots, pool: 'http url' });
    await tick();
    stop.abort(new Error('agent stopped'));
    await expect(waiting).rejects.toThrow('agent stopped');
    expect(limits.loads()).toEqual([]);
    expect(limits.isWaiting('a')).toBe(false);

    slots.down = true;
    const unavailable: unknown[] = [];
    const release = await limits.acquire('url', 'lookup', 1, 'b', undefined, { slots, pool: 'http url', onUnavailable: (err) => unavailable.push(err) });
    expect(unavailable).toHaveLength(1);
    expect(limits.loads()).toEqual([{ tool: 'lookup', waiting: 0, inFlight: 1 }]);
    release();
    expect(limits.loads()).toEqual([]);
  });
});
