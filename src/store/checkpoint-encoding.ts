/**
 * Checkpoints that store what changed. A checkpoint row holds one of:
 * - `json`: the snapshot's plain JSON (small snapshots: nothing to share);
 * - `parts`: the whole snapshot, its large values as references to parts (./snapshot-parts.ts);
 * - `delta`: only the members of the snapshot and of its context that differ from the previous
 *   checkpoint (seq − 1), as `{"r": {member: value}, "c": {contextKey: value}, "x": [gone
 *   members], "d": [gone context keys]}`, values again with references; `base_seq` names the full
 *   checkpoint its chain starts from.
 *
 * What changed is found by identity: XState's `assign` builds a new context object whose unchanged
 * values are the previous ones, so a context value that is the same object (or the same primitive)
 * as in the previous checkpoint is not encoded at all. A chain is cut (the next checkpoint is
 * whole) after `MAX_CHAIN` deltas or once its deltas outweigh `CHAIN_WEIGHT` whole skeletons, so
 * reading any checkpoint back reads a bounded number of rows.
 */
import { jsonReaches, PartEncoder, type EncodedValue, type SnapshotPart } from './snapshot-parts.js';

export type CheckpointFormat = 'json' | 'parts' | 'delta';

export interface EncodedCheckpoint {
  text: string;
  format: CheckpointFormat;
  /** A delta's chain starts from this full checkpoint. */
  baseSeq?: number;
  /** Parts the text refers to that the store may not hold yet. */
  parts: SnapshotPart[];
}

/**
 * A snapshot whose plain JSON is shorter is written so, whole, with one native stringify: too small
 * to start a chain of deltas (MIN_DELTA_SKELETON_BYTES), it would only be walked for parts that
 * save less than the walk costs (idle agents by the thousand).
 */
const PLAIN_SNAPSHOT_BYTES = 1024;
/** A snapshot whose whole skeleton is smaller than this is always written whole: a delta would save little. */
const MIN_DELTA_SKELETON_BYTES = 1024;
export const MAX_CHAIN = 32;
const CHAIN_WEIGHT = 8;
/** Context values this short are kept as text too: a new object with the same text (`decisions: {}`) is no change. */
const SMALL_VALUE_BYTES = 256;
/** A snapshot member or an action's value whose JSON is shorter is stored as it is (see `member`). */
const PLAIN_MEMBER_BYTES = 1024;

interface Written {
  seq: number;
  baseSeq: number;
  chainLength: number;
  chainBytes: number;
  fullBytes: number;
  context: Record<string, unknown> | undefined;
  /** Each member of the snapshot but its context, as stored: they are small, compared as text. */
  members: Map<string, string>;
  /** The context's small values as stored. */
  small: Map<string, string>;
}

type Snapshot = Record<string, unknown>;

class PlainOnly extends Error {}

/** One agent's encoder of checkpoints (and of its action log's values, which share its parts). */
export class CheckpointEncoder {
  private readonly parts = new PartEncoder();
  private last: Written | undefined;
  private handedOver: SnapshotPart[] = [];

  /** Parts read back on restore: the store holds them, so they are not written again. */
  knowStored(hashes: Iterable<string>): void {
    this.parts.knowStored(hashes);
  }

  /** An action's payload or result as stored: the exchange it carries refers to the agent's parts. */
  encodeValue(value: unknown): EncodedValue {
    return this.parts.encode(value, 1, { plainBelow: PLAIN_MEMBER_BYTES });
  }

  /**
   * The persisted snapshot written at `seq` as the store keeps it. Throws as `JSON.stringify`
   * does (a cycle, a BigInt), so a context that cannot be stored fails the transition that made it.
   */
  encode(snapshot: unknown, seq: number): EncodedCheckpoint {
    this.handedOver = [];
    try {
      if (!isRecord(snapshot) || (snapshot.context !== undefined && !isRecord(snapshot.context))) {
        this.last = undefined;
        const whole = this.checked(this.parts.encode(snapshot, 2));
        return { text: whole.text, format: whole.encoded ? 'parts' : 'json', parts: this.handedOver };
      }
      const last = this.last;
      // `last` is kept only after a whole skeleton big enough for deltas (see `whole`).
      const chained = last && last.seq === seq - 1 && last.chainLength < MAX_CHAIN && last.chainBytes < CHAIN_WEIGHT * last.fullBytes;
      if (chained) return this.delta(snapshot, seq, last);
      // Not in a chain: a small snapshot is its plain JSON. A larger one starts a chain, and the
      // deltas that follow are not preceded by this attempt.
      // One that is surely larger (a lower bound of its length says so) is not written plain first.
      if (jsonReaches(snapshot, PLAIN_SNAPSHOT_BYTES)) return this.whole(snapshot, seq);
      const plain = JSON.stringify(snapshot);
      if (plain.length < PLAIN_SNAPSHOT_BYTES) {
        this.last = undefined;
        return { text: plain, format: 'json', parts: this.handedOver };
      }
      return this.whole(snapshot, seq);
    } catch (err) {
      if (!(err instanceof PlainOnly)) throw err;
      // The parts already handed over are written all the same: the encoder counts them stored.
      this.last = undefined;
      return { text: JSON.stringify(snapshot), format: 'json', parts: this.handedOver };
    }
  }

  /** Every value's parts go through here, so that a fallback to plain JSON still writes them. */
  private checked(value: EncodedValue): EncodedValue {
    this.handedOver.push(...value.parts);
    if (value.plainOnly) throw new PlainOnly();
    return value;
  }

  private whole(snapshot: Snapshot, seq: number): EncodedCheckpoint {
    let encoded = false;
    const members = new Map<string, string>();
    const fields: string[] = [];
    const small = new Map<string, string>();
    for (const key of Object.keys(snapshot)) {
      const value =
        key === 'context' ? this.context(snapshot.context as Snapshot, small) : this.member(snapshot[key]);
      if (value === undefined) continue;
      encoded ||= value.encoded;
      if (key !== 'context') members.set(key, value.text);
      fields.push(`${JSON.stringify(key)}:${value.text}`);
    }
    const text = `{${fields.join(',')}}`;
    // A snapshot too small for deltas keeps nothing of itself (idle agents by the thousand): the next one is whole too.
    this.last =
      text.length < MIN_DELTA_SKELETON_BYTES
        ? undefined
        : { seq, baseSeq: seq, chainLength: 0, chainBytes: 0, fullBytes: text.length, context: snapshot.context as Snapshot | undefined, members, small };
    return { text, format: encoded ? 'parts' : 'json', parts: this.handedOver };
  }

  /** Only what differs from `last` (whose maps it updates in place: `last` is replaced by what it returns). */
  private delta(snapshot: Snapshot, seq: number, last: Written): EncodedCheckpoint {
    const { members, small } = last;
    let changed = '';
    let present = 0;
    for (const key in snapshot) {
      if (key === 'context') continue;
      const value = this.member(snapshot[key]);
      if (value === undefined) continue;
      present++;
      if (members.get(key) === value.text) continue;
      members.set(key, value.text);
      changed += `${changed ? ',' : ''}${JSON.stringify(key)}:${value.text}`;
    }
    const gone: string[] = [];
    if (members.size > present) {
      for (const key of members.keys()) {
        if (this.member(snapshot[key]) !== undefined) continue;
        members.delete(key);
        gone.push(key);
      }
    }

    const now = (snapshot.context as Snapshot | undefined) ?? {};
    const before = last.context ?? {};
    let context = '';
    const goneKeys: string[] = [];
    for (const key in now) {
      const value = now[key];
      if (value === before[key] && Object.hasOwn(before, key)) continue;
      // A value JSON omits (undefined, a function) is as good as gone.
      if (value === undefined || typeof value === 'function') {
        if (Object.hasOwn(before, key)) goneKeys.push(key);
        small.delete(key);
        continue;
      }
      // Large last time (a growing exchange): large again, most likely.
      const stored = this.checked(this.parts.encode(value, 0, { large: Object.hasOwn(before, key) && !small.has(key) }));
      if (stored.text.length < SMALL_VALUE_BYTES) {
        if (small.get(key) === stored.text) continue;
        small.set(key, stored.text);
      } else {
        small.delete(key);
      }
      context += `${context ? ',' : ''}${JSON.stringify(key)}:${stored.text}`;
    }
    for (const key in before) {
      if (Object.hasOwn(now, key)) continue;
      goneKeys.push(key);
      small.delete(key);
    }

    const fields: string[] = [];
    if (changed) fields.push(`"r":{${changed}}`);
    if (context) fields.push(`"c":{${context}}`);
    if (gone.length > 0) fields.push(`"x":${JSON.stringify(gone)}`);
    if (goneKeys.length > 0) fields.push(`"d":${JSON.stringify(goneKeys)}`);
    const text = `{${fields.join(',')}}`;
    this.last = {
      seq, baseSeq: last.baseSeq, chainLength: last.chainLength + 1, chainBytes: last.chainBytes + text.length, fullBytes: last.fullBytes,
      context: snapshot.context as Snapshot | undefined, members, small,
    };
    return { text, format: 'delta', baseSeq: last.baseSeq, parts: this.handedOver };
  }

  /**
   * A member of the snapshot (its state value, its children…): never a part itself, its large
   * values are. One short enough is its JSON, not walked for parts: it is written at every
   * transition (the children's snapshots are new objects each time), and the parts a few hundred
   * bytes could hold would save less than walking for them costs.
   */
  private member(value: unknown): EncodedValue | undefined {
    if (value === undefined || typeof value === 'function') return undefined;
    return this.checked(this.parts.encode(value, 1, { plainBelow: PLAIN_MEMBER_BYTES }));
  }

  /** The whole context as one object's text; each value may be a part. `small` collects the short values' texts. */
  private context(context: Snapshot, small: Map<string, string>): EncodedValue {
    let encoded = false;
    const fields: string[] = [];
    for (const key in context) {
      const value = context[key];
      if (value === undefined || typeof value === 'function') continue;
      const stored = this.checked(this.parts.encode(value, 0));
      encoded ||= stored.encoded;
      if (stored.text.length < SMALL_VALUE_BYTES) small.set(key, stored.text);
      fields.push(`${JSON.stringify(key)}:${stored.text}`);
    }
    return { text: `{${fields.join(',')}}`, encoded, parts: [] };
  }
}

interface Delta {
  r?: Snapshot;
  c?: Snapshot;
  x?: string[];
  d?: string[];
}

/** The whole skeleton (references left in) from a chain's full checkpoint and its deltas, in order. */
export function applyDeltas(base: string, deltas: readonly string[]): string {
  if (deltas.length === 0) return base;
  const snapshot = JSON.parse(base) as Snapshot;
  for (const text of deltas) {
    const delta = JSON.parse(text) as Delta;
    Object.assign(snapshot, delta.r);
    for (const key of delta.x ?? []) delete snapshot[key];
    if (delta.c || delta.d) {
      const context = { ...(snapshot.context as Snapshot | undefined), ...delta.c };
      for (const key of delta.d ?? []) delete context[key];
      snapshot.context = context;
    }
  }
  return JSON.stringify(snapshot);
}

function isRecord(value: unknown): value is Snapshot {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
