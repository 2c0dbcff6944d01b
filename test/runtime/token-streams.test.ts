// The text of LLM calls kept for streams: its bounds (per call, per process, finished calls'
// lifetime), the positions clients resume from, and the relay between two processes over a real
// Postgres NOTIFY channel (two stores on one schema, as two `serve` processes would have).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/core/logger.js';
import { formatPosition, parsePosition } from '../../src/runtime/agent-events.js';
import { TokenStreams, type CallTokens } from '../../src/runtime/token-streams.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { freshSchema, postgresUrl } from '../helpers/postgres.js';

const stores: PostgresStore[] = [];
const hubs: TokenStreams[] = [];
afterEach(async () => {
  for (const hub of hubs.splice(0)) hub.close();
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

function hub(limits: ConstructorParameters<typeof TokenStreams>[2] = {}, relay?: ConstructorParameters<typeof TokenStreams>[1]): TokenStreams {
  const made = new TokenStreams(silentLogger, relay, limits);
  hubs.push(made);
  return made;
}

describe('TokenStreams', () => {
  it('keeps a call\'s deltas in order and tells listeners from which index they are new', () => {
    const tokens = hub();
    const seen: [number, number, boolean][] = [];
    tokens.subscribe('a', (call, from) => seen.push([from, call.deltas.length, call.finished]));
    const writer = tokens.begin('a', { seq: 1, turn: 0 });
    writer.write('Hello ');
    writer.write('');
    writer.write('world');
    expect(tokens.inFlight('a')?.deltas).toEqual(['Hello ', 'world']);
    writer.end();
    writer.write('late');
    expect(tokens.inFlight('a')).toBeUndefined();
    expect(tokens.find('a', { seq: 1, turn: 0 })?.deltas).toEqual(['Hello ', 'world']);
    expect(seen).toEqual([[0, 1, false], [1, 2, false], [2, 2, true]]);
  });

  it('a new asking of the same call has a new attempt id and is the one found; an older open one ends', () => {
    const tokens = hub();
    const first = tokens.begin('a', { seq: 1, turn: 0 });
    first.write('x');
    tokens.begin('a', { seq: 1, turn: 0 }).write('y');
    const found = tokens.find('a', { seq: 1, turn: 0 })!;
    expect(found.deltas).toEqual(['y']);
    const calls: CallTokens[] = [];
    tokens.subscribe('a', (call) => calls.push(call));
    first.write('ignored'); // the abandoned asking ended when the new one began
    expect(calls).toEqual([]);
    expect(found.attempt).toMatch(/^[0-9a-z]+$/);
  });

  it('stops keeping (and streaming) a call past the per-call bound', () => {
    const tokens = hub({ perCall: 10 });
    const writer = tokens.begin('a', { seq: 1, turn: 0 });
    for (const delta of ['12345', '6789', '0ab', 'c']) writer.write(delta);
    const call = tokens.inFlight('a')!;
    expect(call.deltas).toEqual(['12345', '6789']);
    expect(call.truncated).toBe(true);
    expect(tokens.heldChars).toBe(9);
  });

  it('lets a finished call that no stream followed go at once', () => {
    const tokens = hub();
    const writer = tokens.begin('a', { seq: 1, turn: 0 });
    writer.write('unseen');
    expect(tokens.inFlight('a')?.deltas).toEqual(['unseen']); // a client may still join mid-call
    writer.end();
    expect(tokens.find('a', { seq: 1, turn: 0 })).toBeUndefined();
    expect(tokens.heldChars).toBe(0);
  });

  it('keeps a finished call a client may come back for: a new asking of a followed call, the first call after a restore', () => {
    const tokens = hub();
    const stop = tokens.subscribe('a', () => undefined);
    tokens.begin('a', { seq: 1, turn: 0 }).write('first asking, followed');
    stop(); // the client drops; the call is asked again while it is away
    const again = tokens.begin('a', { seq: 1, turn: 0 });
    again.write('second asking');
    again.end();
    expect(tokens.find('a', { seq: 1, turn: 0 })?.deltas).toEqual(['second asking']);
    const restored = tokens.begin('b', { seq: 3, turn: 1 }, { resumed: true });
    restored.write('asked again after a crash');
    restored.end();
    expect(tokens.find('b', { seq: 3, turn: 1 })?.deltas).toEqual(['asked again after a crash']);
  });

  it('frees finished calls, oldest first, to stay within the per-process bound; a call in flight that does not fit stops', () => {
    const tokens = hub({ perProcess: 20 });
    for (const id of ['a', 'b', 'c']) tokens.subscribe(id, () => undefined);
    for (const id of ['a', 'b']) {
      const writer = tokens.begin(id, { seq: 1, turn: 0 });
      writer.write('0123456789');
      writer.end();
    }
    expect(tokens.heldChars).toBe(20);
    const c = tokens.begin('c', { seq: 1, turn: 0 });
    c.write('0123456789'); // frees a's call
    expect(tokens.find('a', { seq: 1, turn: 0 })).toBeUndefined();
    expect(tokens.find('b', { seq: 1, turn: 0 })).toBeDefined();
    c.write('0123456789'); // frees b's
    expect(tokens.find('b', { seq: 1, turn: 0 })).toBeUndefined();
    c.write('x'); // nothing left to free: c is over the bound
    expect(tokens.inFlight('c')!.truncated).toBe(true);
    expect(tokens.heldChars).toBe(20);
  });

  it('forgets a finished call after keepFinishedMs, and keeps at most four calls per agent', () => {
    vi.useFakeTimers();
    try {
      const tokens = hub({ keepFinishedMs: 1_000 });
      tokens.subscribe('a', () => undefined);
      for (let turn = 0; turn < 6; turn++) {
        const writer = tokens.begin('a', { seq: 1, turn });
        writer.write(`t${turn}`);
        writer.end();
      }
      expect([0, 1, 2, 3, 4, 5].map((turn) => tokens.find('a', { seq: 1, turn }) !== undefined)).toEqual([false, false, true, true, true, true]);
      vi.advanceTimersByTime(1_001);
      expect(tokens.find('a', { seq: 1, turn: 5 })).toBeUndefined();
      expect(tokens.heldChars).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('stream positions (event ids)', () => {
  it('round-trip, and only ids of this shape are read', () => {
    for (const position of [{ checkpoint: 0 }, { checkpoint: 12 }, { checkpoint: 12, call: { seq: 3, turn: 1, attempt: 'a1b2c31', next: 40 } }]) {
      expect(parsePosition(formatPosition(position))).toEqual(position);
    }
    for (const bad of ['', 'x', '-1', '1.2', '1.2.3.abc', '1.2.3.ABC.4', '1.2.3.a.4.5', `${'9'.repeat(16)}`]) expect(parsePosition(bad), bad).toBeUndefined();
  });
});

describe('relayed between processes over Postgres NOTIFY', () => {
  it('a follower gets the owner\'s call from its start, then each delta, in order, and the end', { timeout: 20_000 }, async () => {
    const schema = freshSchema();
    const owner = await openPostgresStore(postgresUrl, { schema, processId: 'owner' });
    stores.push(owner);
    const follower = await openPostgresStore(postgresUrl, { schema, processId: 'follower' });
    stores.push(follower);
    const here = hub({}, owner.leases!.relay);
    const there = hub({}, follower.leases!.relay);

    const writer = here.begin('agent-1', { seq: 2, turn: 1 });
    writer.write('before ');
    writer.write('anyone ');
    const received: string[] = [];
    let ended = false;
    there.subscribe('agent-1', (call, from) => {
      received.push(...call.deltas.slice(from));
      ended = call.finished;
    }, { remote: true });
    // The owner answers the follower's ask with what it has so far.
    await vi.waitFor(() => expect(received).toEqual(['before ', 'anyone ']), { timeout: 5_000 });
    for (const word of ['asked, ', 'then ', 'more.']) writer.write(word);
    writer.end();
    await vi.waitFor(() => expect(ended).toBe(true), { timeout: 5_000 });
    expect(received.join('')).toBe('before anyone asked, then more.');
    const mirrored = there.find('agent-1', { seq: 2, turn: 1 })!;
    expect(mirrored.attempt).toBe(here.find('agent-1', { seq: 2, turn: 1 })!.attempt);
    // What the owner relays is only for agents someone follows.
    const other = here.begin('agent-2', { seq: 1, turn: 0 });
    other.write('unseen');
    other.end();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(there.find('agent-2', { seq: 1, turn: 0 })).toBeUndefined();
  });
});
