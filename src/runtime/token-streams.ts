/**
 * The text of LLM calls as it is generated, for streams to show: a view, never state. The answer a
 * call resolves to is committed whole by its checkpoint as before; what is kept here only lets a
 * client that reconnects catch up on a call still in flight (or just finished), and lets other
 * processes relay it (the store's `Relay`).
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../core/logger.js';
import type { Relay } from '../store/store.js';

/** Which LLM call of an agent: task `seq`, and `turn`, the call's position within the task from 0. */
export interface CallKey {
  seq: number;
  turn: number;
}

/** One asking of one LLM call, as this process saw it. */
export interface CallTokens extends CallKey {
  readonly agentId: string;
  /** Unique per asking: a retry, or a restart after a crash, asks the same call again under a new one. */
  readonly attempt: string;
  /** The deltas so far, in order; a delta's position is its `index`. */
  readonly deltas: string[];
  /** Characters kept (the sum of the deltas' lengths). */
  chars: number;
  /** Over the per-call bound: later deltas are neither kept nor streamed. */
  truncated: boolean;
  finished: boolean;
  /**
   * Some stream followed it, or an earlier asking of it (here or, for the first call after a restore,
   * in the process that ran the agent before): once finished it is kept a while, for that client to
   * catch up after a drop.
   */
  watched: boolean;
}

export interface TokenWriter {
  write(delta: string): void;
  /** The call resolved or failed: no more deltas. */
  end(): void;
}

/** Called after deltas were added to a call (from `from` on), and once more when it ends. */
export type TokenListener = (call: CallTokens, from: number) => void;


export interface TokenStreamLimits {
  /** Characters kept of one call (default 1 Mi). */
  perCall: number;
  /** Characters kept of all calls in this process (default 64 Mi); finished calls go first. */
  perProcess: number;
  /** How long a finished call stays for clients catching up (default 60 s). */
  keepFinishedMs: number;
  /** How often relayed deltas are sent (default 20 ms): the added delay of a stream opened elsewhere. */
  relayEveryMs: number;
}

export const DEFAULT_TOKEN_LIMITS: TokenStreamLimits = { perCall: 1 << 20, perProcess: 64 << 20, keepFinishedMs: 60_000, relayEveryMs: 20 };

/** How long an interest in another process's agent lasts unless renewed. */
const INTEREST_MS = 30_000;
const RENEW_INTEREST_MS = 10_000;
/** Under Postgres's 8000-byte NOTIFY payload, with room for the JSON around the deltas. */
const MAX_RELAY_PAYLOAD = 7_000;
/** Calls kept per agent: the one in flight and the last few (one retry, one restart). */
const CALLS_PER_AGENT = 4;

interface RelayedCall {
  a: string;
  s: number;
  t: number;
  g: string;
  /** Index of the first delta in `d`. */
  i: number;
  d: string[];
  f?: 1;
}

export class TokenStreams {
  private readonly calls = new Map<string, CallTokens[]>();
  private readonly listeners = new Map<string, Set<TokenListener>>();
  private readonly limits: TokenStreamLimits;
  private readonly tag = randomBytes(3).toString('hex');
  private attempts = 0;
  private chars = 0;
  /** Owner side: agents that streams in other processes follow, until when. */
  private readonly remoteInterest = new Map<string, number>();
  /** Follower side: agents run elsewhere that streams here follow, with their renewal timers. */
  private readonly following = new Map<string, { count: number; timer: NodeJS.Timeout }>();
  private outgoing: RelayedCall[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly log: Logger,
    private readonly relay?: Relay,
    limits: Partial<TokenStreamLimits> = {},
  ) {
    this.limits = { ...DEFAULT_TOKEN_LIMITS, ...limits };
    relay?.onMessage((message) => this.receive(message));
  }

  /** Characters held now, over every call (for the bounds' tests and a gauge). */
  get heldChars(): number {
    return this.chars;
  }

  /**
   * Starts one asking of an LLM call of an agent run here. `resumed`: the first call of an agent
   * restored from its checkpoint, which a client of the process that ran it before may come back for.
   */
  begin(agentId: string, key: CallKey, { resumed = false } = {}): TokenWriter {
    const followedBefore = resumed || this.find(agentId, key)?.watched === true;
    const call = this.add({ agentId, seq: key.seq, turn: key.turn, attempt: `${this.tag}${(++this.attempts).toString(36)}` });
    if (followedBefore) call.watched = true;
    return {
      write: (delta) => {
        if (call.finished || delta === '') return;
        const from = call.deltas.length;
        if (!this.keep(call, delta)) return;
        this.relayOut(call, from);
        this.notify(call, from);
      },
      end: () => {
        if (call.finished) return;
        this.finish(call);
        this.relayOut(call, call.deltas.length);
      },
    };
  }

  /** The newest asking of call `key` of an agent known here, if any. */
  find(agentId: string, key: CallKey): CallTokens | undefined {
    const calls = this.calls.get(agentId);
    if (!calls) return undefined;
    for (let i = calls.length - 1; i >= 0; i--) if (calls[i]!.seq === key.seq && calls[i]!.turn === key.turn) return calls[i];
    return undefined;
  }

  /** The agent's call in flight, if one streams now. */
  inFlight(agentId: string): CallTokens | undefined {
    const last = this.calls.get(agentId)?.at(-1);
    return last && !last.finished ? last : undefined;
  }

  /**
   * Calls `listener` as deltas of the agent's calls arrive. `remote`: the agent runs in another
   * process, whose deltas are asked for and relayed while someone listens.
   */
  subscribe(agentId: string, listener: TokenListener, { remote = false } = {}): () => void {
    let set = this.listeners.get(agentId);
    if (!set) this.listeners.set(agentId, (set = new Set()));
    set.add(listener);
    const unfollow = remote && this.relay ? this.follow(agentId) : undefined;
    return () => {
      unfollow?.();
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(agentId);
    };
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.flushTimer);
    for (const { timer } of this.following.values()) clearInterval(timer);
    this.following.clear();
  }

  // --- keeping -----------------------------------------------------------------------------------

  private add(fields: Pick<CallTokens, 'agentId' | 'seq' | 'turn' | 'attempt'>): CallTokens {
    // Named, not spread: `{ ...fields, deltas… }` (a spread followed by new keys) is many times
    // slower to build in V8, and every LLM call builds one.
    const { agentId, seq, turn, attempt } = fields;
    const call: CallTokens = { agentId, seq, turn, attempt, deltas: [], chars: 0, truncated: false, finished: false, watched: this.listeners.has(agentId) };
    let calls = this.calls.get(fields.agentId);
    if (!calls) this.calls.set(fields.agentId, (calls = []));
    calls.push(call);
    // An agent runs one call at a time: an older one still open here was abandoned (its actor stopped).
    for (const older of calls) if (older !== call && !older.finished) this.finish(older);
    while (calls.length > CALLS_PER_AGENT) this.drop(calls[0]!);
    return call;
  }

  /** Adds a delta within the bounds; false once the call is over them. */
  private keep(call: CallTokens, delta: string): boolean {
    if (call.truncated) return false;
    if (call.chars + delta.length > this.limits.perCall || !this.makeRoom(delta.length)) {
      call.truncated = true;
      this.log.warn({ agentId: call.agentId, seq: call.seq, turn: call.turn, chars: call.chars }, 'LLM call streams no more tokens: over the bound of kept text');
      return false;
    }
    call.deltas.push(delta);
    call.chars += delta.length;
    this.chars += delta.length;
    return true;
  }

  /** Frees finished calls, oldest first, until `chars` more fit in the process's bound. */
  private makeRoom(chars: number): boolean {
    if (this.chars + chars <= this.limits.perProcess) return true;
    const finished = [...this.calls.values()].flat().filter((c) => c.finished);
    for (const call of finished) {
      this.drop(call);
      if (this.chars + chars <= this.limits.perProcess) return true;
    }
    return false;
  }

  /** A finished call no stream followed is let go at once: most calls are never watched, and no client can resume into one it never saw. */
  private finish(call: CallTokens): void {
    call.finished = true;
    this.notify(call, call.deltas.length);
    if (call.watched) setTimeout(() => this.drop(call), this.limits.keepFinishedMs).unref();
    else this.drop(call);
  }

  private drop(call: CallTokens): void {
    const calls = this.calls.get(call.agentId);
    const at = calls?.indexOf(call) ?? -1;
    if (at < 0) return;
    calls!.splice(at, 1);
    this.chars -= call.chars;
    if (calls!.length === 0) this.calls.delete(call.agentId);
  }

  private notify(call: CallTokens, from: number): void {
    const set = this.listeners.get(call.agentId);
    if (!set) return;
    call.watched = true;
    for (const listener of set) {
      try {
        listener(call, from);
      } catch (err) {
        this.log.warn({ err, agentId: call.agentId }, 'a token listener failed');
      }
    }
  }

  // --- relaying between processes ------------------------------------------------------------------

  /** Asks the agent's owner to relay its deltas, now and again while someone here follows. */
  private follow(agentId: string): () => void {
    let entry = this.following.get(agentId);
    if (!entry) {
      const ask = () => void this.relay!.send(JSON.stringify({ w: agentId })).catch((err: unknown) => this.log.warn({ err, agentId }, 'could not ask for relayed tokens'));
      ask();
      entry = { count: 0, timer: setInterval(ask, RENEW_INTEREST_MS).unref() };
      this.following.set(agentId, entry);
    }
    entry.count++;
    const followed = entry;
    return () => {
      if (--followed.count > 0) return;
      clearInterval(followed.timer);
      this.following.delete(agentId);
    };
  }

  private relayOut(call: CallTokens, from: number): void {
    if (!this.relay || this.closed) return;
    const until = this.remoteInterest.get(call.agentId);
    if (until === undefined) return;
    if (until < Date.now()) {
      this.remoteInterest.delete(call.agentId);
      return;
    }
    call.watched = true;
    this.queue(call, from);
  }

  private queue(call: CallTokens, from: number): void {
    const last = this.outgoing.at(-1);
    const delta = call.deltas.slice(from);
    if (last && last.a === call.agentId && last.g === call.attempt && last.i + last.d.length === from) last.d.push(...delta);
    else this.outgoing.push({ a: call.agentId, s: call.seq, t: call.turn, g: call.attempt, i: from, d: delta });
    if (call.finished) this.outgoing.at(-1)!.f = 1;
    this.flushTimer ??= setTimeout(() => this.flush(), this.limits.relayEveryMs);
  }

  private flush(): void {
    this.flushTimer = undefined;
    const batch = this.outgoing;
    this.outgoing = [];
    for (const payload of payloads(batch)) {
      this.relay!.send(payload).catch((err: unknown) => this.log.warn({ err }, 'could not relay tokens'));
    }
  }

  private receive(payload: string): void {
    for (const line of payload.split('\n')) {
      let message: { w?: string } & Partial<RelayedCall>;
      try {
        message = JSON.parse(line) as typeof message;
      } catch {
        continue;
      }
      if (typeof message.w === 'string') this.wanted(message.w);
      else if (typeof message.a === 'string' && Array.isArray(message.d)) this.mirror(message as RelayedCall);
    }
  }

  /**
   * Another process follows an agent: if it runs here, relay its calls from their start, and its
   * next deltas as they come. Kept by every process (a map entry): the agent may start here later.
   */
  private wanted(agentId: string): void {
    const now = Date.now();
    if (this.remoteInterest.size >= 1024) for (const [id, until] of this.remoteInterest) if (until < now) this.remoteInterest.delete(id);
    this.remoteInterest.set(agentId, now + INTEREST_MS);
    for (const call of this.calls.get(agentId) ?? []) {
      if (!call.attempt.startsWith(this.tag)) continue;
      call.watched = true;
      this.queue(call, 0);
    }
  }

  /** Deltas of an agent run elsewhere, into the same calls a local one would have. */
  private mirror(message: RelayedCall): void {
    if (message.g.startsWith(this.tag)) return; // our own, heard back
    let call = this.calls.get(message.a)?.find((c) => c.attempt === message.g);
    if (!call) {
      if (message.i !== 0) return; // joined mid-call: the next full relay (after our `w`) starts it
      call = this.add({ agentId: message.a, seq: message.s, turn: message.t, attempt: message.g });
    }
    if (call.finished) return;
    const from = call.deltas.length;
    // Repeats (a full relay after another process asked too) are skipped; a gap means a lost NOTIFY.
    if (message.i > from) {
      call.truncated = true;
      return;
    }
    for (const delta of message.d.slice(from - message.i)) if (!this.keep(call, delta)) break;
    if (call.deltas.length > from) this.notify(call, from);
    if (message.f) this.finish(call);
  }
}

/** Batches as NOTIFY payloads under the size limit, one JSON line per call's run of deltas. */
function payloads(batch: RelayedCall[]): string[] {
  const out: string[] = [];
  let current = '';
  for (const message of batch) {
    for (const line of splitLines(message)) {
      if (current && current.length + line.length + 1 > MAX_RELAY_PAYLOAD) {
        out.push(current);
        current = '';
      }
      current = current ? `${current}\n${line}` : line;
    }
  }
  if (current) out.push(current);
  return out;
}

function splitLines(message: RelayedCall): string[] {
  const line = JSON.stringify(message);
  if (Buffer.byteLength(line) <= MAX_RELAY_PAYLOAD || message.d.length <= 1) return [line];
  const half = Math.ceil(message.d.length / 2);
  const first: RelayedCall = { a: message.a, s: message.s, t: message.t, g: message.g, i: message.i, d: message.d.slice(0, half) };
  const rest: RelayedCall = { ...message, i: message.i + half, d: message.d.slice(half) };
  return [...splitLines(first), ...splitLines(rest)];
}
