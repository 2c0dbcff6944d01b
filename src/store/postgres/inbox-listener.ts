/**
 * Notifications between processes, on one channel of the store's schema (`pg_notify`, sent when the
 * transaction commits): every accepted inbox event so that the agent's owner delivers it, every
 * status change so that a copy running elsewhere ends, and every agent's newest committed checkpoint
 * so that views and streams in other processes follow it. One LISTEN connection per process hands them to the
 * listeners registered here.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { AgentChange } from '../store.js';

export type NotificationKind = AgentChange['kind'];

const KIND_TAGS: Record<NotificationKind, string> = { event: 'e', status: 's', checkpoint: 'c' };
const TAG_KINDS = new Map(Object.entries(KIND_TAGS).map(([kind, tag]) => [tag, kind as NotificationKind]));

const MAX_IDENTIFIER_BYTES = 63;
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5_000;

/**
 * The channel of one schema: tests (and tenants) run many schemas in one database, and a process
 * must only hear its own. Postgres truncates longer identifiers, so a long name is hashed instead.
 */
export function inboxChannel(schema: string): string {
  const channel = `da_inbox_${schema}`;
  if (Buffer.byteLength(channel) <= MAX_IDENTIFIER_BYTES) return channel;
  return `da_inbox_${createHash('sha256').update(schema).digest('hex').slice(0, 40)}`;
}

/**
 * The payload `pg_notify` is sent with: `<tag> <agentId> <seq> [owner]` (agent ids and process ids
 * have no spaces; a status change has seq 0), so that the listener can read it back.
 */
export function notificationPayload(change: AgentChange): string {
  const seq = change.kind === 'status' ? 0 : change.seq;
  const owner = change.kind === 'checkpoint' ? null : change.owner;
  return `${KIND_TAGS[change.kind]} ${change.agentId} ${seq}${owner === null ? '' : ` ${owner}`}`;
}

function changeOf(kind: NotificationKind, agentId: string, seq: number, owner: string | null): AgentChange {
  if (kind === 'event') return { kind, agentId, seq, owner };
  if (kind === 'status') return { kind, agentId, owner };
  return { kind, agentId, seq };
}

/**
 * A dedicated connection that LISTENs on the schema's channel. When that connection drops, it
 * connects again with a growing backoff; notifications sent meanwhile are lost, which is why the
 * runtime also polls `pendingInboxes()`.
 */
/** Relay messages (store.ts `Relay`) go on the same channel, after this tag: one LISTEN connection hears both. */
const RELAY_TAG = 'r ';

export function relayPayload(message: string): string {
  return RELAY_TAG + message;
}

export class InboxListener {
  private readonly listeners: ((change: AgentChange) => void)[] = [];
  private readonly relayListeners: ((message: string) => void)[] = [];
  /** The connection that listens, and the one being opened to replace it (never both). */
  private client: pg.Client | undefined;
  private connecting: pg.Client | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMs = RETRY_FIRST_MS;
  private closed = false;

  constructor(
    private readonly config: pg.ClientConfig,
    readonly channel: string,
  ) {}

  /** Resolves once notifications are heard: an event committed after that reaches the listeners. */
  async start(): Promise<void> {
    await this.connect();
  }

  add(listener: (change: AgentChange) => void): void {
    this.listeners.push(listener);
  }

  addRelay(listener: (message: string) => void): void {
    this.relayListeners.push(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const clients = [this.client, this.connecting].filter((c) => c !== undefined);
    this.client = this.connecting = undefined;
    // Ending one still connecting makes its `connect()` fail, and a closed listener retries no more.
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(this.config);
    client.on('notification', (n) => this.dispatch(n));
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    this.connecting = client;
    try {
      await client.connect();
      await client.query(`listen ${pg.escapeIdentifier(this.channel)}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    } finally {
      if (this.connecting === client) this.connecting = undefined;
    }
    if (this.closed) throw new Error('The inbox listener was closed while it connected.');
    this.client = client;
    this.retryMs = RETRY_FIRST_MS;
  }

  /** The current connection failed or ended without `close()`: listen again on a new one. */
  private lost(client: pg.Client): void {
    if (client !== this.client) return; // one still connecting reports through `connect()`; one closed is done
    this.client = undefined;
    client.end().catch(() => undefined);
    this.retryLater();
  }

  private retryLater(): void {
    if (this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.connect().catch(() => {
        this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
        this.retryLater();
      });
    }, this.retryMs);
  }

  private dispatch(notification: pg.Notification): void {
    const payload = notification.payload ?? '';
    if (payload.startsWith(RELAY_TAG)) {
      const message = payload.slice(RELAY_TAG.length);
      for (const listener of this.relayListeners) guarded(() => listener(message));
      return;
    }
    const [tag, agentId, seqText, owner, extra] = payload.split(' ');
    const kind = TAG_KINDS.get(tag ?? '');
    const seq = Number(seqText);
    if (!kind || !agentId || extra !== undefined || !Number.isSafeInteger(seq)) return; // not one of ours
    const change = changeOf(kind, agentId, seq, owner ?? null);
    for (const listener of this.listeners) guarded(() => listener(change));
  }
}

/**
 * Thrown from a notification handler, an error would unwind pg's message parsing and break the
 * connection: a listener's error surfaces on its own tick instead, as an event listener's would.
 */
function guarded(call: () => void): void {
  try {
    call();
  } catch (err) {
    setImmediate(() => {
      throw err;
    });
  }
}
