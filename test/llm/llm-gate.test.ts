import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { gatedCall } from '../../src/llm/flow/gated-call.js';
import { LlmGate, type LlmPermit } from '../../src/llm/flow/llm-gate.js';

/** Settles the promise callbacks queued so far. */
const flush = () => vi.advanceTimersByTimeAsync(0);

/** Acquires and records, in order, which agents got a permit. */
function recorder(gate: LlmGate) {
  const granted: string[] = [];
  const permits = new Map<string, LlmPermit>();
  const ask = (agentId: string, ticket: { since?: number; tokens?: number; notBefore?: number } = {}, signal?: AbortSignal) =>
    gate.acquire({ agentId, ...ticket }, signal).then((permit) => {
      granted.push(agentId);
      permits.set(agentId, permit);
      return permit;
    });
  return { granted, permits, ask };
}

describe('LlmGate', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('lets no more calls run than its concurrency, and serves the waiting ones as capacity frees', async () => {
    const gate = new LlmGate({ concurrency: 3 });
    const { granted, permits, ask } = recorder(gate);
    for (const id of ['a', 'b', 'c', 'd', 'e']) void ask(id);
    await flush();
    expect(granted).toEqual(['a', 'b', 'c']);
    expect(gate.queueDepth).toBe(2);
    expect(gate.isWaiting('d')).toBe(true);
    expect(gate.isWaiting('a')).toBe(false);
    permits.get('b')!.release();
    await flush();
    expect(granted).toEqual(['a', 'b', 'c', 'd']);
    expect(gate.peakInFlight).toBe(3);
  });

  it('serves the agent that started asking first, even when it comes back later (a restored agent keeps its place)', async () => {
    const gate = new LlmGate({ concurrency: 1 });
    const { granted, permits, ask } = recorder(gate);
    void ask('first');
    await flush();
    void ask('late', { since: Date.now() + 10 });
    void ask('restored', { since: Date.now() - 60_000 });
    await flush();
    permits.get('first')!.release();
    await flush();
    expect(granted).toEqual(['first', 'restored']);
  });

  it('halves its limit once for a wave of refusals, then raises it by 1/limit per success', async () => {
    const gate = new LlmGate({ concurrency: 8 });
    const { permits, ask } = recorder(gate);
    for (let i = 0; i < 8; i++) void ask(`a${i}`);
    await flush();
    // All eight refused together: one burst, one decrease.
    for (let i = 0; i < 8; i++) permits.get(`a${i}`)!.throttled();
    expect(gate.limit).toBe(4);
    for (let i = 0; i < 4; i++) void ask(`b${i}`);
    await flush();
    // A refusal of a call granted after the decrease is news: it halves again.
    permits.get('b0')!.throttled();
    expect(gate.limit).toBe(2);
    // 2 + 1/2 + 1/2.5 + ... : the limit climbs back by about one per limit's worth of successes.
    permits.get('b1')!.release();
    permits.get('b2')!.release();
    expect(gate.limit).toBe(2);
    permits.get('b3')!.release();
    expect(gate.limit).toBe(3);
  });

  it('never lowers its limit below one, nor raises it above its ceiling', async () => {
    const gate = new LlmGate({ concurrency: 2 });
    const { permits, ask } = recorder(gate);
    for (let round = 0; round < 4; round++) {
      void ask(`r${round}`);
      await flush();
      permits.get(`r${round}`)!.throttled();
    }
    expect(gate.limit).toBe(1);
    for (let round = 0; round < 20; round++) {
      void ask(`s${round}`);
      await flush();
      permits.get(`s${round}`)!.release();
    }
    expect(gate.limit).toBe(2);
  });

  it('spaces requests evenly under a requests-per-minute limit', async () => {
    const gate = new LlmGate({ concurrency: 10, rpm: 600 }); // one per 100 ms
    const { granted, ask } = recorder(gate);
    for (const id of ['a', 'b', 'c']) void ask(id);
    await flush();
    expect(granted).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(99);
    expect(granted).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(1);
    expect(granted).toEqual(['a', 'b']);
    await vi.advanceTimersByTimeAsync(100);
    expect(granted).toEqual(['a', 'b', 'c']);
  });

  it('charges estimated tokens, corrects them with what a call spent, and holds the line for a large call', async () => {
    const gate = new LlmGate({ concurrency: 10, tpm: 6_000 }); // 100 tokens a second
    const { granted, permits, ask } = recorder(gate);
    void ask('big', { tokens: 5_000 });
    await flush();
    void ask('next', { tokens: 2_000 });
    void ask('small', { tokens: 10 });
    await flush();
    // 1,000 tokens left: "next" waits for 1,000 more (10 s), and "small" waits behind it.
    expect(granted).toEqual(['big']);
    // "big" spent only 1,000 of its 5,000: the 4,000 come back, and both fit at once.
    permits.get('big')!.release({ tokens: 1_000 });
    await flush();
    expect(granted).toEqual(['big', 'next', 'small']);
  });

  it('lets a call the provider asked to wait be overtaken until its time comes', async () => {
    const gate = new LlmGate({ concurrency: 1 });
    const { granted, permits, ask } = recorder(gate);
    void ask('waits', { since: 0, notBefore: Date.now() + 1_000 });
    void ask('other', { since: 1 });
    await flush();
    expect(granted).toEqual(['other']);
    permits.get('other')!.release();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(granted).toEqual(['other', 'waits']);
  });

  it('forgets a waiting call whose signal aborts', async () => {
    const gate = new LlmGate({ concurrency: 1 });
    const { granted, permits, ask } = recorder(gate);
    void ask('a');
    const controller = new AbortController();
    const aborted = ask('b', {}, controller.signal).catch((err: unknown) => err);
    void ask('c');
    await flush();
    controller.abort(new Error('agent stopped'));
    expect(await aborted).toEqual(new Error('agent stopped'));
    expect(gate.queueDepth).toBe(1);
    permits.get('a')!.release();
    await flush();
    expect(granted).toEqual(['a', 'c']);
  });
});

describe('gatedCall', () => {
  const rateLimited = (err: unknown) =>
    (err as { status?: number }).status === 429 ? { retryAfterMs: (err as { retryAfterMs?: number }).retryAfterMs } : undefined;

  it('asks again after a 429, after the provider’s Retry-After, without the caller seeing the refusal', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    try {
      const gate = new LlmGate({ concurrency: 2 });
      const answers = [Object.assign(new Error('slow down'), { status: 429, retryAfterMs: 500 }), 'the answer'];
      const calls: number[] = [];
      let throttled = 0;
      const result = gatedCall(
        gate,
        { agentId: 'a' },
        undefined,
        async () => {
          calls.push(Date.now());
          const next = answers.shift();
          if (next instanceof Error) throw next;
          return next;
        },
        { rateLimited, onThrottled: () => throttled++, random: () => 0 },
      );
      await vi.advanceTimersByTimeAsync(499);
      expect(calls).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(await result).toBe('the answer');
      expect(calls).toEqual([1_000_000, 1_000_500]);
      expect(throttled).toBe(1);
      // Halved to 1 by the refusal, raised by 1/1 by the success.
      expect(gate.limit).toBe(2);
      expect(gate.inFlight).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('passes any other failure through, and gives the capacity back', async () => {
    const gate = new LlmGate({ concurrency: 1 });
    const failure = Object.assign(new Error('bad request'), { status: 400 });
    await expect(gatedCall(gate, { agentId: 'a' }, undefined, () => Promise.reject(failure), { rateLimited })).rejects.toBe(failure);
    expect(gate.inFlight).toBe(0);
    expect(gate.limit).toBe(1);
  });
});
