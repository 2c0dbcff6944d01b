/**
 * Values stored once (src/store/snapshot-parts.ts) and checkpoints that store what changed
 * (src/store/checkpoint-encoding.ts): whatever is written must read back as the value's own JSON,
 * and a new version of a long conversation must write only what is new.
 */
import { describe, expect, it } from 'vitest';
import { nextRandom } from '../../src/core/random.js';
import { applyDeltas, CheckpointEncoder, MAX_CHAIN, type EncodedCheckpoint } from '../../src/store/checkpoint-encoding.js';
import { decodeParts, jsonReaches, PartEncoder, referencedParts, type SnapshotPart } from '../../src/store/snapshot-parts.js';

const SEED = 20261201;

function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    const draw = nextRandom(state);
    state = draw.state;
    return draw.value;
  };
}

/** What a store keeps of one agent: every part handed over, by hash. */
function partStore() {
  const bodies = new Map<string, string>();
  return {
    bodies,
    keep(parts: readonly SnapshotPart[]) {
      for (const { hash, body } of parts) bodies.set(hash, body);
    },
  };
}

/** Random JSON: nested objects and arrays (some long), numbers, short and long strings (seeded). */
function randomValue(random: () => number, depth = 0): unknown {
  const pick = random();
  if (depth > 4 || pick < 0.3) {
    const kind = Math.floor(random() * 5);
    if (kind === 0) return Math.round(random() * 1e6) / 100;
    if (kind === 1) return random() < 0.5;
    if (kind === 2) return null;
    const length = random() < 0.2 ? 600 + Math.floor(random() * 2000) : Math.floor(random() * 40);
    return Array.from({ length }, () => 'abcdefghij "\\é😀'[Math.floor(random() * 16)]).join('');
  }
  if (pick < 0.6) {
    // Long arrays (chunked, chunks of chunks) near the top only: nested ones would multiply.
    const length = depth < 2 && random() < 0.3 ? Math.floor(random() * 120) : Math.floor(random() * 5);
    return Array.from({ length }, () => randomValue(random, depth + 1));
  }
  return Object.fromEntries(Array.from({ length: Math.floor(random() * 7) }, (_, i) => [`k${i}${random() < 0.1 ? ' "key"' : ''}`, randomValue(random, depth + 1)]));
}

describe('values stored once (parts)', () => {
  it('reads back every value as its own JSON, across 300 seeded random values', () => {
    const random = seededRandom(SEED);
    for (let i = 0; i < 300; i++) {
      const value = { context: randomValue(random) };
      const store = partStore();
      const encoded = new PartEncoder().encode(value);
      store.keep(encoded.parts);
      expect(decodeParts(encoded.text, store.bodies), `value ${i}`).toBe(JSON.stringify(value));
    }
  });

  it('judges a value long without writing it only when its JSON is that long (a lower bound), across 500 seeded values', () => {
    const random = seededRandom(SEED + 1);
    // What JSON leaves out or writes its own way: undefined and functions (omitted, or null in an array), a toJSON.
    const odd = [undefined, () => 1, new Date(0), Symbol('s')];
    const withOdd = (value: unknown): unknown => {
      if (Array.isArray(value)) return [...value.map(withOdd), odd[Math.floor(random() * odd.length)]];
      if (typeof value !== 'object' || value === null) return value;
      return { ...Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withOdd(v)])), odd: odd[Math.floor(random() * odd.length)] };
    };
    let long = 0;
    for (let i = 0; i < 500; i++) {
      const value = { v: withOdd(randomValue(random)) };
      const length = JSON.stringify(value).length;
      for (const limit of [1, 16, 256, 1024, length - 1, length, length + 1]) {
        const reaches = jsonReaches(value, limit);
        if (reaches) expect(length, `value ${i}, limit ${limit}`).toBeGreaterThanOrEqual(limit);
      }
      if (jsonReaches(value, Math.ceil(length / 2))) long++;
    }
    // Not a bound that never says yes: close enough to judge nearly every value at half its length.
    expect(long).toBeGreaterThan(450);
  });

  it('writes a growing conversation once: a new version of 800 messages hands over only its new parts', () => {
    const encoder = new PartEncoder();
    const store = partStore();
    const message = (i: number) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}: ${'words '.repeat(30 + (i % 7))}` });
    let messages: { role: string; content: string }[] = [];
    let firstBytes = 0;
    let lastBytes = 0;
    for (let i = 0; i < 800; i++) {
      messages = [...messages, message(i)];
      const encoded = encoder.encode({ context: { messages } }, 2);
      store.keep(encoded.parts);
      const written = encoded.text.length + encoded.parts.reduce((sum, p) => sum + p.body.length, 0);
      if (i === 20) firstBytes = written;
      if (i === 799) lastBytes = written;
      if (i % 97 === 0 || i === 799) expect(decodeParts(encoded.text, store.bodies)).toBe(JSON.stringify({ context: { messages } }));
    }
    // Writing the 800th message costs about what the 21st did (the whole conversation is ~190 KB).
    expect(lastBytes).toBeLessThan(firstBytes * 2);
    expect(JSON.stringify(messages).length).toBeGreaterThan(150_000);
  });

  it('stores a long string once, wherever it appears, and a part already stored is not handed over again', () => {
    const encoder = new PartEncoder();
    const answer = 'a long answer '.repeat(100);
    const first = encoder.encode({ context: { results: [{ response: answer }], answer } }, 2);
    const strings = first.parts.filter((p) => p.body === JSON.stringify(answer));
    expect(strings).toHaveLength(1);
    const again = encoder.encode({ context: { log: { output: answer } } }, 2);
    expect(again.parts).toEqual([]);
    expect(referencedParts(again.text)).toEqual([strings[0]!.hash]);
  });

  it('knows the parts its store already holds (after a restore) and hands none of them over', () => {
    const value = { context: { conversation: Array.from({ length: 40 }, (_, i) => ({ text: `turn ${i} ${'x'.repeat(200)}` })) } };
    const first = new PartEncoder().encode(JSON.parse(JSON.stringify(value)) as unknown, 2);
    const restored = new PartEncoder();
    restored.knowStored(first.parts.map((p) => p.hash));
    const again = restored.encode(JSON.parse(JSON.stringify(value)) as unknown, 2);
    expect(again.text).toBe(first.text);
    expect(again.parts).toEqual([]);
  });

  it('stores a value with U+0000 in a key or a string as plain JSON, which no reference can be mistaken in', () => {
    for (const value of [{ context: { '\u0000r0123456789abcdef': 'x'.repeat(2000) } }, { context: { list: ['\u0000s0123456789abcdef', 'y'.repeat(3000)] } }]) {
      const encoded = new PartEncoder().encode(value);
      expect(encoded).toMatchObject({ encoded: false, parts: [], plainOnly: true });
      expect(encoded.text).toBe(JSON.stringify(value));
    }
  });

  it('fails as JSON.stringify does on a cycle or a BigInt, so the transition that made it fails', () => {
    const cyclic: Record<string, unknown> = { filler: 'z'.repeat(2000) };
    cyclic.self = cyclic;
    expect(() => new PartEncoder().encode({ context: cyclic })).toThrow(TypeError);
    expect(() => new PartEncoder().encode({ context: { n: 10n } })).toThrow(TypeError);
  });

  it('freezes what it made a part of, so changing a stored value in place fails loudly instead of going unstored', () => {
    const results = Array.from({ length: 3 }, (_, i) => ({ seq: i, response: `response ${i} ${'r'.repeat(300)}`, usage: { tokens: i } }));
    const encoded = new PartEncoder().encode({ context: { results } });
    expect(encoded.parts.length).toBeGreaterThan(0);
    expect(() => {
      results[0]!.response = 'changed';
    }).toThrow(TypeError);
    expect(() => {
      results[1]!.usage.tokens = 7;
    }).toThrow(TypeError);
    // The array holding them is not a part (three references are short): it is encoded anew each time.
    results.push({ seq: 3, response: 'late', usage: { tokens: 3 } });
  });

  it('names the missing part when one is not stored', () => {
    const encoded = new PartEncoder().encode({ context: { big: 'b'.repeat(4000) } });
    const [part] = encoded.parts;
    expect(() => decodeParts(encoded.text, new Map())).toThrow(`refers to a part ${part!.hash} that is not stored`);
  });
});

describe('checkpoints that store what changed', () => {
  /** A context of many small values: its skeleton is long enough for deltas. */
  const smallValues = Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`setting${i}`, i]));

  /** A snapshot as XState persists it, with a context that grows as a conversation does. */
  function snapshotAt(step: number, context: Record<string, unknown>) {
    return { status: 'active', value: step % 2 ? 'callingLLM' : 'idle', historyValue: {}, context, children: {} };
  }

  /** Every checkpoint read back as a store does: from its chain's full one and its deltas. */
  function readBack(rows: Map<number, EncodedCheckpoint>, bodies: ReadonlyMap<string, string>, seq: number): string {
    const row = rows.get(seq)!;
    let skeleton = row.text;
    if (row.format === 'delta') {
      const chain = [];
      for (let s = row.baseSeq!; s < seq; s++) chain.push(rows.get(s)!.text);
      skeleton = applyDeltas(chain[0]!, [...chain.slice(1), row.text]);
    }
    return row.format === 'json' ? skeleton : decodeParts(skeleton, bodies);
  }

  it('writes deltas of the keys that changed, reads every checkpoint back whole, and cuts its chains', () => {
    const random = seededRandom(SEED + 1);
    const encoder = new CheckpointEncoder();
    const store = partStore();
    const rows = new Map<number, EncodedCheckpoint>();
    const expected = new Map<number, string>();
    let context: Record<string, unknown> = { ...smallValues, model: 'm', tools: [{ name: 't', schema: 's'.repeat(400) }], messages: [], turn: 0, answer: null };
    for (let seq = 1; seq <= 150; seq++) {
      const change = random();
      if (change < 0.5) context = { ...context, messages: [...(context.messages as unknown[]), { role: 'user', content: `m${seq} ${'w'.repeat(Math.floor(random() * 600))}` }] };
      else if (change < 0.7) context = { ...context, turn: (context.turn as number) + 1, answer: random() < 0.5 ? null : `answer ${seq}` };
      else if (change < 0.8) context = { ...context, decisions: {} }; // a new object with the same text as before
      else if (change < 0.9) {
        const { answer: _gone, ...rest } = context;
        context = { ...rest, extra: random() < 0.5 ? undefined : seq };
      } else context = { ...context, answer: `answer ${seq}` };
      const snapshot = snapshotAt(seq, context);
      const encoded = encoder.encode(snapshot, seq);
      store.keep(encoded.parts);
      rows.set(seq, encoded);
      expected.set(seq, JSON.stringify(snapshot));
    }
    for (const [seq, json] of expected) expect(JSON.parse(readBack(rows, store.bodies, seq)), `checkpoint ${seq}`).toEqual(JSON.parse(json));
    const formats = [...rows.values()].map((r) => r.format);
    expect(formats.filter((f) => f === 'delta').length).toBeGreaterThan(100);
    // No chain is longer than MAX_CHAIN deltas.
    for (const [seq, row] of rows) if (row.format === 'delta') expect(seq - row.baseSeq!).toBeLessThanOrEqual(MAX_CHAIN);
  });

  it('leaves out a key whose new value has the same text as before', () => {
    const encoder = new CheckpointEncoder();
    const base = { ...smallValues, decisions: {}, turn: 1 };
    encoder.encode(snapshotAt(1, base), 1);
    const next = encoder.encode(snapshotAt(1, { ...base, decisions: {}, turn: 2 }), 2);
    expect(next.format).toBe('delta');
    expect(JSON.parse(next.text)).toEqual({ c: { turn: 2 } });
  });

  it('writes whole what follows a gap in seqs (a restore), and a small snapshot always', () => {
    const encoder = new CheckpointEncoder();
    const big = { ...smallValues, filler: 'f'.repeat(1500), turn: 1 };
    expect(encoder.encode(snapshotAt(1, big), 1).format).toBe('parts');
    expect(encoder.encode(snapshotAt(1, { ...big, turn: 2 }), 2).format).toBe('delta');
    expect(encoder.encode(snapshotAt(1, { ...big, turn: 3 }), 7).format).toBe('parts');
    const small = new CheckpointEncoder();
    small.encode(snapshotAt(1, { turn: 1 }), 1);
    expect(small.encode(snapshotAt(1, { turn: 2 }), 2)).toMatchObject({ format: 'json', parts: [] });
    // Under 1 KB of JSON a snapshot is written plain, even one holding a string as long as a part.
    const modest = new CheckpointEncoder();
    const context = { answer: 'a'.repeat(600) };
    for (const seq of [1, 2, 3]) expect(modest.encode(snapshotAt(1, { ...context, turn: seq }), seq)).toEqual({ text: JSON.stringify(snapshotAt(1, { ...context, turn: seq })), format: 'json', parts: [] });
  });
});
