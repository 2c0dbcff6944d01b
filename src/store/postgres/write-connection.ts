import pg from 'pg';

/**
 * The one connection every write transaction runs on, one at a time: `CommitQueue` hands it the
 * next transaction only once the previous one is over (on a pool, two could commit out of order).
 * A connection that breaks is replaced at the next transaction.
 */
export class WriteConnection {
  private client: pg.Client | undefined;

  constructor(private readonly config: pg.ClientConfig) {}

  /** Runs `work` inside a transaction of its own: committed if it resolves, rolled back if it throws. */
  async transaction<T>(work: (client: pg.ClientBase) => Promise<T>): Promise<T> {
    const client = await this.connected();
    try {
      await client.query('begin');
      const result = await work(client);
      await client.query('commit');
      return result;
    } catch (err) {
      // A rollback that fails means the connection is gone (and the transaction with it): drop it.
      await client.query('rollback').catch(() => this.drop(client));
      throw err;
    }
  }

  /** Ends the connection; the caller has let its last transaction finish. */
  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connected(): Promise<pg.Client> {
    if (!this.client) {
      const client = new pg.Client(this.config);
      // A connection lost between transactions: the next one connects anew.
      client.on('error', () => this.drop(client));
      await client.connect();
      this.client = client;
    }
    return this.client;
  }

  private drop(client: pg.Client): void {
    if (client !== this.client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
  }
}
