/**
 * Values stored once: a snapshot's (or an action's) large values are written as *parts*, kept once
 * per agent under the hash of their JSON, and referred to from every later checkpoint that still
 * holds them. A part is an object or array of `MIN_PART_BYTES` or more of JSON, a string of
 * `MIN_STRING_BYTES` or more (an answer, a tool result: the same text sits in the exchange, in the
 * results and in the action log), or a full chunk of a long array.
 *
 * Finding what is new costs no diff: XState's `assign` keeps every unchanged object of the context
 * by reference, so a part already made for an object is found again by identity (`WeakMap`), and a
 * long array's full chunks by their first item, checked item by item.
 *
 * The stored text turns back into the value's own JSON by substitution alone:
 * - `"\u0000r<hash>"` stands for the part's JSON (an object, an array or a string);
 * - `"\u0000s<hash>"`, an item of an array, stands for several items: a chunk's items joined by
 *   commas (a chunk of chunks holds such items itself, so a long array is a shallow tree);
 * and no value's own JSON can contain either: a value with U+0000 in a string or a key is stored
 * as plain JSON (the encoder falls back).
 */
import { hash as digest } from 'node:crypto';

/** Objects and arrays whose JSON is at least this long become parts (below it, a reference saves little). */
export const MIN_PART_BYTES = 256;
/** Strings at least this long become parts (found by content: strings have no identity to find them by). */
export const MIN_STRING_BYTES = 512;
/** A long array is cut into chunks of this many items; only full chunks become parts. */
export const CHUNK_ITEMS = 8;
/**
 * Chunks are grouped this many to a chunk of chunks, until no more than this many remain: what a
 * new version of a long array writes (its top and its last partial chunk) stays a few references.
 */
export const TREE_FANOUT = 4;
/** An item of a long array whose JSON is at least this long is a part: the array's new versions refer to it. */
export const MIN_ITEM_PART_BYTES = 128;

/** A part to store: the hash of its body, and its body (JSON, or a chunk's items joined by commas). */
export interface SnapshotPart {
  hash: string;
  body: string;
}

export interface EncodedValue {
  /** The value's JSON, its parts replaced by references when `encoded`. */
  text: string;
  /** Whether `text` holds references (else it is the value's plain JSON). */
  encoded: boolean;
  /** The parts the store may not have yet: every part the value holds, less those known stored. */
  parts: SnapshotPart[];
  /**
   * The value has U+0000 in an object key, which stored text could not tell from a reference: it
   * is plain JSON, and whatever holds it must be stored as plain JSON too.
   */
  plainOnly?: true;
}

interface Part {
  hash: string;
  /** How the part is referred to in its holder's text. */
  ref: string;
  /** Parts held inside this one: stored no later than it. */
  inner: readonly Part[];
  /** Until first handed to a store (then only the hash is kept: memory stays small). */
  body: string | undefined;
}

interface Chunk extends Part {
  items: readonly unknown[];
}

const REF = 'r';
const SPLICE = 's';
/** A reference's hash: 16 base64url characters, 96 bits of SHA-256 (per agent: collisions are out of reach). */
const HASH_CHARS = 16;

/** U+0000 in a key or a string: the value is stored as plain JSON. */
class UnencodableKey extends Error {}

const WALK_PATH = new Set<object>();

/**
 * One agent's encoder of values into parts: remembers the parts it made (by the objects they were
 * made from) and which of them its store already holds, so each write hashes and hands over only
 * what is new.
 */
export class PartEncoder {
  // Made on first use: an agent that never holds a large value (most idle ones) pays for none of them.
  private partsOf: WeakMap<object, Part> | undefined;
  private chunksOf: WeakMap<object, Chunk> | undefined;
  /** Hashes of parts the store holds or will hold once the writes already handed over commit. */
  private storedSet: Set<string> | undefined;

  private get parts(): WeakMap<object, Part> {
    return (this.partsOf ??= new WeakMap());
  }

  private get chunks(): WeakMap<object, Chunk> {
    return (this.chunksOf ??= new WeakMap());
  }

  private get stored(): Set<string> {
    return (this.storedSet ??= new Set());
  }

  /** Objects on the path being walked (shared: encoding is synchronous): JSON has no cycles (below the walk, JSON.stringify finds them). */
  private readonly path = WALK_PATH;

  /** Parts read back on restore: the store holds them, so they are not written again. */
  knowStored(hashes: Iterable<string>): void {
    for (const hash of hashes) this.stored.add(hash);
  }

  /**
   * `value` as the store keeps it. Values shallower than `shallowest` are never parts themselves
   * (a snapshot and its own members change at every transition: as parts they would be one more
   * row per checkpoint, never shared). Throws as `JSON.stringify` does (a cycle, a BigInt), so a
   * context that cannot be stored fails the transition that made it. `plainBelow`: a value whose
   * JSON is shorter is stored as that JSON, whatever it holds (default: the size of a part).
   */
  encode(value: unknown, shallowest = 0, { large = false, plainBelow = MIN_PART_BYTES }: { large?: boolean; plainBelow?: number } = {}): EncodedValue {
    // Most values a checkpoint writes are small: their JSON is all there is to it (nothing short
    // holds a part). One that was large last time (`large`) is walked at once, not written twice.
    let known: string | undefined;
    if (shallowest <= 1 && !large) {
      const small = this.small(value, plainBelow);
      if (typeof small !== 'string') return small;
      known = small;
    }
    const held: Part[] = [];
    let text: string;
    try {
      text = this.value(value, held, 0, shallowest, MIN_PART_BYTES, known !== undefined || large) ?? 'null';
    } catch (err) {
      if (!(err instanceof UnencodableKey)) throw err;
      return { text: JSON.stringify(value), encoded: false, parts: [], plainOnly: true };
    } finally {
      this.path.clear();
    }
    return held.length === 0 ? { text, encoded: false, parts: [] } : { text, encoded: true, parts: this.newParts(held) };
  }

  /** A value whose JSON is short (or a primitive) as it is; else its JSON, if written, or ''. */
  private small(value: unknown, plainBelow: number): EncodedValue | string {
    if (typeof value === 'string' && value.length >= MIN_STRING_BYTES) return '';
    if (typeof value === 'object' && value !== null && (this.partsOf?.has(value) || (Array.isArray(value) && value.length > CHUNK_ITEMS) || jsonReaches(value, plainBelow))) return '';
    const text = JSON.stringify(value) as string | undefined;
    if (text !== undefined && text.length >= plainBelow) return text;
    if (text?.includes('\\u0000')) return { text, encoded: false, parts: [], plainOnly: true };
    return { text: text ?? 'null', encoded: false, parts: [] };
  }

  /** Every part not yet stored, inner parts first; a stored part's inner parts are stored too. */
  private newParts(held: readonly Part[]): SnapshotPart[] {
    const out: SnapshotPart[] = [];
    for (const part of held) this.visitNew(part, out);
    return out;
  }

  private visitNew(part: Part, out: SnapshotPart[]): void {
    if (this.stored.has(part.hash)) return;
    for (const inner of part.inner) this.visitNew(inner, out);
    this.stored.add(part.hash);
    out.push({ hash: part.hash, body: part.body! });
    part.body = undefined;
  }

  /**
   * The JSON of `value` with its parts as references (undefined where JSON.stringify omits it).
   * Most of a snapshot is small values, which JSON.stringify writes far faster than any walk here:
   * a value is walked only when it may hold parts (its JSON is long, or it is a long array), and
   * the shallowest ones, which change at every transition, are walked without trying.
   */
  private value(value: unknown, held: Part[], depth: number, shallowest: number, minPart = MIN_PART_BYTES, walk = false): string | undefined {
    if (typeof value === 'string') {
      // U+0000 in a string could be read back as a reference: such a value is stored as plain JSON.
      if (value.includes('\u0000')) throw new UnencodableKey();
      return value.length >= MIN_STRING_BYTES && depth >= shallowest ? this.string(value, held) : JSON.stringify(value);
    }
    // Primitives as JSON.stringify writes them: it throws on a BigInt, omits functions and symbols.
    if (value === null || typeof value !== 'object') return JSON.stringify(value) as string | undefined;
    const known = this.partsOf?.get(value);
    if (known) {
      held.push(known);
      return known.ref;
    }
    if (!walk && depth >= shallowest && !(Array.isArray(value) && value.length > CHUNK_ITEMS) && !jsonReaches(value, minPart)) {
      const text = JSON.stringify(value) as string | undefined;
      if (text === undefined || text.length < minPart) {
        if (text?.includes('\\u0000')) throw new UnencodableKey();
        return text;
      }
    }
    if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
      return this.value((value as { toJSON(): unknown }).toJSON(), held, depth, shallowest, minPart);
    }
    if (this.path.has(value)) throw new TypeError('Converting circular structure to JSON');
    this.path.add(value);
    const inner: Part[] = [];
    const text = Array.isArray(value)
      ? this.array(value, inner, depth, shallowest)
      : this.object(value as Record<string, unknown>, inner, depth, shallowest);
    this.path.delete(value);
    if (depth < shallowest || text.length < minPart) {
      held.push(...inner);
      return text;
    }
    const part = makePart(REF, text, inner);
    // A part is found again by identity, so what it was made from must not change under it: XState
    // never changes a context in place, and a machine that tries now fails loudly instead of
    // storing a stale part.
    deepFreeze(value);
    this.parts.set(value, part);
    held.push(part);
    return part.ref;
  }

  private string(value: string, held: Part[]): string {
    const part = makePart(REF, JSON.stringify(value), []);
    held.push(part);
    return part.ref;
  }

  private object(object: Record<string, unknown>, held: Part[], depth: number, shallowest: number): string {
    let text = '{';
    for (const key of Object.keys(object)) {
      if (key.includes('\u0000')) throw new UnencodableKey();
      const item = this.value(object[key], held, depth + 1, shallowest);
      if (item === undefined) continue;
      text += `${text.length > 1 ? ',' : ''}${JSON.stringify(key)}:${item}`;
    }
    return `${text}}`;
  }

  private array(array: readonly unknown[], held: Part[], depth: number, shallowest: number): string {
    const full = array.length > CHUNK_ITEMS ? array.length - (array.length % CHUNK_ITEMS) : 0;
    const texts: string[] = [];
    if (full > 0) {
      const leaves: Part[] = [];
      for (let i = 0; i < full; i += CHUNK_ITEMS) {
        leaves.push(
          this.chunk(array, i, CHUNK_ITEMS, (items) => {
            const inner: Part[] = [];
            const body = items.map((item) => this.value(item, inner, depth + 1, shallowest, MIN_ITEM_PART_BYTES) ?? 'null').join(',');
            for (const item of items) if (item !== null && typeof item === 'object') deepFreeze(item);
            return { body, inner };
          }),
        );
      }
      for (const part of this.tree(leaves)) {
        held.push(part);
        texts.push(part.ref);
      }
    }
    // The last partial chunk is written again with every new version of the array: its items as references.
    const minPart = full > 0 ? MIN_ITEM_PART_BYTES : MIN_PART_BYTES;
    for (let i = full; i < array.length; i++) texts.push(this.value(array[i], held, depth + 1, shallowest, minPart) ?? 'null');
    return `[${texts.join(',')}]`;
  }

  /**
   * Groups chunks by TREE_FANOUT, level by level, each level's leftover staying as it is: the top is
   * at most TREE_FANOUT − 1 references per level, and every full group is found again next time.
   */
  private tree(leaves: Part[]): Part[] {
    const top: Part[][] = [];
    let level = leaves;
    while (level.length >= TREE_FANOUT) {
      const full = level.length - (level.length % TREE_FANOUT);
      top.unshift(level.slice(full));
      const upper: Part[] = [];
      for (let i = 0; i < full; i += TREE_FANOUT) {
        upper.push(this.chunk(level, i, TREE_FANOUT, (chunks) => ({ body: chunks.map((c) => c.ref).join(','), inner: chunks })));
      }
      level = upper;
    }
    return [...level, ...top.flat()];
  }

  /** The chunk of `items[from … from + size)`, found again when it holds the same items. */
  private chunk<T>(items: readonly T[], from: number, size: number, make: (slice: T[]) => { body: string; inner: readonly Part[] }): Part {
    const first = items[from];
    const key = typeof first === 'object' && first !== null ? first : undefined;
    const known = key && this.chunksOf?.get(key);
    if (known && known.items.length === size && known.items.every((item, i) => item === items[from + i])) return known;
    const slice = items.slice(from, from + size);
    const { body, inner } = make(slice);
    const chunk: Chunk = { ...makePart(SPLICE, body, inner), items: slice };
    if (key) this.chunks.set(key, chunk);
    return chunk;
  }
}

/**
 * Whether the JSON of `value` (an object or array) is at least `limit` characters long, judged
 * without writing it: a lower bound of its length (strings and keys as they are, escapes not
 * counted, every number one digit), given up as soon as it reaches `limit`. A value found long is
 * walked for parts at once: written whole first, its text would be thrown away (and a new answer
 * in a new message would be written once for the exchange, once for the message, once for itself).
 * What the bound cannot see (a `toJSON`, a nesting deeper than it looks) counts as short: the
 * caller writes it and measures, as before.
 */
export function jsonReaches(value: object, limit: number): boolean {
  return jsonLeft(value, limit, 0) <= 0;
}

/** `left` less a lower bound of the JSON length of `value`, stopping once it is 0 or less. */
function jsonLeft(value: unknown, left: number, depth: number): number {
  switch (typeof value) {
    case 'string':
      return left - value.length - 2;
    case 'number':
    case 'boolean':
      return left - 1;
    case 'object':
      break;
    default:
      return left; // undefined, a function, a symbol: omitted; a BigInt: JSON.stringify throws on it
  }
  if (value === null) return left - 4;
  if (depth >= MAX_BOUND_DEPTH || typeof (value as { toJSON?: unknown }).toJSON === 'function') return left;
  if (Array.isArray(value)) {
    left -= value.length + 1; // brackets and commas
    for (let i = 0; i < value.length && left > 0; i++) left = jsonLeft(value[i], left, depth + 1);
    return left;
  }
  left -= 1; // braces, less the comma the last key does not have
  for (const key in value) {
    if (left <= 0) break;
    if (!Object.hasOwn(value, key)) continue;
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
    left = jsonLeft(item, left - key.length - 4, depth + 1); // "key": and a comma
  }
  return left;
}

const MAX_BOUND_DEPTH = 32;

function deepFreeze(value: object): void {
  if (Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const item of Object.values(value)) if (item !== null && typeof item === 'object') deepFreeze(item as object);
}

function makePart(kind: typeof REF | typeof SPLICE, body: string, inner: readonly Part[]): Part {
  const hash = digest('sha256', body, 'base64url').slice(0, HASH_CHARS);
  return { hash, ref: `"\\u0000${kind}${hash}"`, inner, body };
}

/** The hashes of the parts `text` refers to directly. */
export function referencedParts(text: string): string[] {
  const hashes: string[] = [];
  for (let i = text.indexOf(REFERENCE_OPENING); i >= 0; i = text.indexOf(REFERENCE_OPENING, i + 1)) {
    const hash = referenceAt(text, i);
    if (hash !== undefined) hashes.push(hash);
  }
  return hashes;
}

/**
 * The value's own JSON from its stored text and the bodies of its parts. Throws when a part is
 * missing (state corruption: the caller quarantines the agent with the message). A scan for the
 * references' opening, not a regular expression's replace: a 750 KB conversation is put back
 * together in one pass into one list of slices, joined once.
 */
export function decodeParts(text: string, bodies: ReadonlyMap<string, string>): string {
  const out: string[] = [];
  const expand = (stored: string, depth: number) => {
    if (depth > MAX_PART_DEPTH) throw new Error('its snapshot refers to parts that refer to each other');
    let at = 0;
    for (let i = stored.indexOf(REFERENCE_OPENING); i >= 0; i = stored.indexOf(REFERENCE_OPENING, at)) {
      const hash = referenceAt(stored, i);
      if (hash === undefined) {
        out.push(stored.slice(at, i + 1));
        at = i + 1;
        continue;
      }
      const body = bodies.get(hash);
      if (body === undefined) throw new Error(`its snapshot refers to a part ${hash} that is not stored`);
      out.push(stored.slice(at, i));
      // A reference's body is the whole value, a splice's its items: either goes in as it is.
      expand(body, depth + 1);
      at = i + REFERENCE_LENGTH;
    }
    out.push(at === 0 ? stored : stored.slice(at));
  };
  expand(text, 0);
  return out.join('');
}

/** `"\u0000`: every reference starts so, and nothing else in stored text does but a string holding U+0000, which is never stored so. */
const REFERENCE_OPENING = '"\\u0000';
/** `"\u0000` + kind + hash + `"`. */
const REFERENCE_LENGTH = REFERENCE_OPENING.length + 1 + HASH_CHARS + 1;
/** Parts nest as deep as the values they came from; deeper than this is a loop (a damaged store). */
const MAX_PART_DEPTH = 256;

function referenceAt(text: string, i: number): string | undefined {
  const kind = text[i + REFERENCE_OPENING.length];
  if ((kind !== REF && kind !== SPLICE) || text[i + REFERENCE_LENGTH - 1] !== '"') return undefined;
  return text.slice(i + REFERENCE_OPENING.length + 1, i + REFERENCE_LENGTH - 1);
}

/** Reads the bodies of an agent's parts: those of `hashes` that it holds. */
export type PartLoader = (agentId: string, hashes: string[]) => Promise<ReadonlyMap<string, string>> | ReadonlyMap<string, string>;

/**
 * The stored text as the value's own JSON, and the hashes of the parts it took, read level by
 * level (a part's body may refer to more parts).
 */
export async function withParts(agentId: string, text: string, load: PartLoader): Promise<{ text: string; parts: string[] }> {
  const bodies = await collectParts(agentId, [text], load);
  return { text: decodeParts(text, bodies), parts: [...bodies.keys()] };
}

/** The bodies of every part `texts` refer to, through the parts those refer to (a missing one is left out). */
export async function collectParts(agentId: string, texts: Iterable<string>, load: PartLoader): Promise<Map<string, string>> {
  const bodies = new Map<string, string>();
  let wanted = firstLevel(texts);
  while (wanted.length > 0) wanted = nextLevel(wanted, await load(agentId, wanted), bodies);
  return bodies;
}

/**
 * The same, synchronously (SQLite prunes in one transaction, which cannot wait): what a retention
 * policy must keep.
 */
export function referencedClosure(texts: Iterable<string>, load: (hashes: string[]) => ReadonlyMap<string, string>): Set<string> {
  const bodies = new Map<string, string>();
  let wanted = firstLevel(texts);
  while (wanted.length > 0) wanted = nextLevel(wanted, load(wanted), bodies);
  return new Set(bodies.keys());
}

function firstLevel(texts: Iterable<string>): string[] {
  const hashes = new Set<string>();
  for (const text of texts) for (const hash of referencedParts(text)) hashes.add(hash);
  return [...hashes];
}

/** Keeps the bodies found of `wanted`; returns the hashes they refer to that were not seen yet. */
function nextLevel(wanted: readonly string[], found: ReadonlyMap<string, string>, bodies: Map<string, string>): string[] {
  const next = new Set<string>();
  for (const hash of wanted) {
    const body = found.get(hash);
    if (body === undefined) continue; // decodeParts says which one is missing
    bodies.set(hash, body);
  }
  for (const hash of wanted) {
    const body = bodies.get(hash);
    if (body !== undefined) for (const inner of referencedParts(body)) if (!bodies.has(inner)) next.add(inner);
  }
  return [...next];
}
