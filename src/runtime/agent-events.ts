/**
 * What `GET /agents/:id/stream` sends, apart from HTTP: the agent's views after committed
 * transitions (`snapshot`), the text of the LLM call in flight (`token`), and `restart` when a call
 * whose text was streamed is asked again. Each event's id is the client's whole position: the last
 * checkpoint shown and, within the call it followed, which asking of it and how many deltas it has.
 * A client that comes back with that id (`Last-Event-ID`) gets what it missed, in order, and then
 * the live events, with no duplicates, whichever process it reconnects to.
 */
import type { Store } from '../store/store.js';
import type { CallKey, CallTokens, TokenStreams } from './token-streams.js';
import { checkpointView, type AgentView } from './views.js';

export type AgentEvent =
  | { event: 'snapshot'; id: string; view: AgentView }
  | { event: 'token'; id: string; data: { seq: number; turn: number; delta: string; index: number } }
  | { event: 'restart'; id: string; data: CallKey };

/** Where a client is: the last checkpoint shown, and in the call it followed, the asking and the next delta's index. */
export interface StreamPosition {
  checkpoint: number;
  call?: CallKey & { attempt: string; next: number };
}

/** An asking that is not known: after a `restart` for a call whose new asking has not streamed yet. */
const UNKNOWN_ATTEMPT = '0';
/** Checkpoints replayed to a client that comes back; beyond, it gets the newest view only. */
const MAX_REPLAYED = 1_000;

const POSITION = /^(\d{1,15})(?:\.(\d{1,15})\.(\d{1,9})\.([0-9a-z]{1,32})\.(\d{1,9}))?$/;

export function formatPosition(position: StreamPosition): string {
  const { call } = position;
  return call ? `${position.checkpoint}.${call.seq}.${call.turn}.${call.attempt}.${call.next}` : String(position.checkpoint);
}

/** The position an event id names; undefined for one this server did not make. */
export function parsePosition(id: string): StreamPosition | undefined {
  const match = POSITION.exec(id);
  if (!match) return undefined;
  const checkpoint = Number(match[1]);
  if (match[2] === undefined) return { checkpoint };
  return { checkpoint, call: { seq: Number(match[2]), turn: Number(match[3]), attempt: match[4]!, next: Number(match[5]) } };
}

export interface AgentEventSources {
  store: Pick<Store, 'getAgent' | 'getCheckpoint'>;
  tokens: TokenStreams;
  /** The agent's view now and the seq of the checkpoint it shows. */
  current(agentId: string): Promise<{ view: AgentView; seq: number }>;
  watch(agentId: string, listener: (view: AgentView, seq: number) => void): () => void;
  /** The agent runs in another process (shared store): its tokens must be relayed here. */
  runsElsewhere(agentId: string): boolean;
}

/**
 * One client's events for one agent. `emit` receives them in order; `ended` resolves after a view
 * whose status is not `active` (nothing will change any more). Call `close()` when the client goes.
 */
export class AgentEventFeed {
  private position: StreamPosition;
  private lastView: string | undefined;
  private readonly unsubscribe: (() => void)[] = [];
  private replaying = true;
  /** Live events that came while the past was read: sent after it, in order. */
  private readonly held: (() => void)[] = [];
  private finished = false;
  private count = 0;
  private resolveEnded!: () => void;
  readonly ended = new Promise<void>((resolve) => (this.resolveEnded = resolve));
  private resolveClosed!: () => void;
  /** Resolves when `close()` was called. */
  readonly closed = new Promise<void>((resolve) => (this.resolveClosed = resolve));

  private constructor(
    private readonly sources: AgentEventSources,
    private readonly agentId: string,
    from: StreamPosition | undefined,
    private readonly emit: (event: AgentEvent) => void,
  ) {
    this.position = from ?? { checkpoint: -1 };
  }

  /**
   * Opens the feed: subscribes first (so nothing falls between), reads the agent (throws for an
   * unknown one), sends what the client missed since `from` (everything current when absent).
   */
  static async open(sources: AgentEventSources, agentId: string, from: StreamPosition | undefined, emit: (event: AgentEvent) => void): Promise<AgentEventFeed> {
    const feed = new AgentEventFeed(sources, agentId, from, emit);
    try {
      await feed.start(from);
    } catch (err) {
      feed.close();
      throw err;
    }
    return feed;
  }

  close(): void {
    this.resolveClosed();
    for (const stop of this.unsubscribe.splice(0)) stop();
    this.finish();
  }

  private async start(from: StreamPosition | undefined): Promise<void> {
    const { sources, agentId } = this;
    this.unsubscribe.push(sources.watch(agentId, (view, seq) => this.live(() => this.showView(view, seq))));
    this.unsubscribe.push(
      sources.tokens.subscribe(agentId, (call) => this.live(() => this.showCall(call)), { remote: sources.runsElsewhere(agentId) }),
    );
    const { view, seq } = await sources.current(agentId);
    if (from) await this.replayCheckpoints(from.checkpoint, seq);
    this.showView(view, seq);
    this.catchUpTokens();
    this.replaying = false;
    for (const event of this.held.splice(0)) event();
  }

  private live(show: () => void): void {
    if (this.finished) return;
    if (this.replaying) this.held.push(show);
    else show();
  }

  /** The views of the checkpoints after `after` up to `newest`, read from the store. */
  private async replayCheckpoints(after: number, newest: number): Promise<void> {
    if (newest - after > MAX_REPLAYED || newest <= after + 1) return; // `newest` itself is shown from memory
    const agent = await this.sources.store.getAgent(this.agentId);
    if (!agent) return;
    for (let seq = after + 1; seq < newest; seq++) {
      const checkpoint = await this.sources.store.getCheckpoint(this.agentId, seq);
      if (!checkpoint) continue; // pruned
      const view = checkpointView(agent, checkpoint);
      this.showView(view, seq);
    }
  }

  /** What the client missed of the call it followed, then of the call in flight. */
  private catchUpTokens(): void {
    const followed = this.position.call;
    if (followed && followed.attempt !== UNKNOWN_ATTEMPT) {
      const call = this.sources.tokens.find(this.agentId, followed);
      // Not kept here (another process asked it, or it finished long ago): its text so far is void.
      if (!call) this.restart(followed);
      else this.showCall(call);
    }
    const inFlight = this.sources.tokens.inFlight(this.agentId);
    if (inFlight) this.showCall(inFlight);
  }

  private showView(view: AgentView, seq: number): void {
    if (this.finished || seq < this.position.checkpoint) return;
    const data = JSON.stringify(view);
    // The checkpoint the client came back from (it has that view), or one commit seen by both the first read and the watcher.
    if (seq === this.position.checkpoint && (this.lastView === undefined || data === this.lastView)) {
      if (view.status !== 'active') this.finish();
      return;
    }
    this.lastView = data;
    this.position = { ...this.position, checkpoint: seq };
    this.send({ event: 'snapshot', id: formatPosition(this.position), view });
    if (view.status !== 'active') this.finish();
  }

  /** The deltas of `call` the client has not had; a `restart` first when it followed another asking of the same call. */
  private showCall(call: CallTokens): void {
    if (this.finished) return;
    let followed = this.position.call;
    const sameCall = followed && followed.seq === call.seq && followed.turn === call.turn;
    if (!sameCall || !followed) {
      followed = { seq: call.seq, turn: call.turn, attempt: call.attempt, next: 0 };
    } else if (followed.attempt === UNKNOWN_ATTEMPT) {
      followed = { ...followed, attempt: call.attempt, next: 0 };
    } else if (followed.attempt !== call.attempt) {
      this.restart(followed);
      followed = { seq: call.seq, turn: call.turn, attempt: call.attempt, next: 0 };
    }
    this.position = { ...this.position, call: followed };
    if (followed.next >= call.deltas.length) return;
    // The id of each token differs only in its last number: the rest is made once per batch of deltas.
    const prefix = `${this.position.checkpoint}.${call.seq}.${call.turn}.${call.attempt}.`;
    for (let index = followed.next; index < call.deltas.length; index++) {
      followed.next = index + 1;
      this.send({ event: 'token', id: prefix + (index + 1), data: { seq: call.seq, turn: call.turn, delta: call.deltas[index]!, index } });
    }
  }

  private restart(key: CallKey): void {
    this.position = { ...this.position, call: { seq: key.seq, turn: key.turn, attempt: UNKNOWN_ATTEMPT, next: 0 } };
    this.send({ event: 'restart', id: formatPosition(this.position), data: { seq: key.seq, turn: key.turn } });
  }

  /** Events sent so far: none on a feed that ended at once means the client already had everything (HTTP 204). */
  get sent(): number {
    return this.count;
  }

  /** Nothing more will be sent: the agent ended, or the feed was closed. */
  get done(): boolean {
    return this.finished;
  }

  private send(event: AgentEvent): void {
    this.count++;
    this.emit(event);
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.resolveEnded();
  }
}
