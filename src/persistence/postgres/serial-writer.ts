import pg from 'pg';

/**
 * Runs write transactions one after another, in call order, on one dedicated connection. The
 * runtime calls `commit` again before the previous call resolves; on one pg client two
 * transactions' statements would interleave, and on a pool they could commit out of order.
 * A connection that breaks is replaced at the next transaction.
 */
export class SerialWriter {
  private client: pg.Client | undefined;
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly config: pg.ClientConfig) {}

  /** Queues `work` to run inside its own transaction; resolves (or rejects) once that transaction is over. */
  transaction<T>(work: (client: pg.ClientBase) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error('The Postgres store is closed.'));
    const run = this.tail.then(() => this.run(work));
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Lets the queued transactions finish, then ends the connection. */
  async close(): Promise<void> {
    this.closed = true;
    await this.tail;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async run<T>(work: (client: pg.ClientBase) => Promise<T>): Promise<T> {
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

  /** Only `run` calls it, and runs never overlap: no two connections are opened at once. */
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
