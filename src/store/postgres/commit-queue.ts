import pg from 'pg';
import { AgentsError, StoreUnavailableError } from '../../core/errors.js';
import type { Write, WriteResult } from '../store.js';

interface Waiting {
  writes: readonly Write[];
  resolve: (results: WriteResult[]) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit across `commit` calls: while one transaction runs, the calls that arrive wait, and
 * the next transaction takes all of them at once (their writes in call order, then each call's
 * results split back out). The runtime hands over a new batch at every turn of the event loop
 * without waiting for the previous one; on a store where a commit takes several round trips, each
 * call alone would be its own small transaction. A merged transaction that fails is retried one
 * call per transaction, so one call's error (an unknown agent) fails that call only.
 * Calls still settle in call order, and each call's writes are applied in order after the earlier calls'.
 *
 * A call that fails because the database is out of reach (a StoreUnavailableError) fails every call
 * queued behind it with the same error, unstarted: the runtime holds an agent's writes and retries
 * them in order (runtime/committer.ts), and a later call that got through on a new connection
 * would commit an agent's next checkpoint before the one that failed.
 */
export class CommitQueue {
  private waiting: Waiting[] = [];
  /** Settles once every call made so far has settled. */
  private running: Promise<void> | undefined;

  constructor(private readonly transact: (writes: readonly Write[]) => Promise<WriteResult[]>) {}

  commit(writes: readonly Write[]): Promise<WriteResult[]> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ writes, resolve, reject });
      this.running ??= this.run();
    });
  }

  /** Resolves once every call made so far has settled (before the store closes its connection). */
  async drained(): Promise<void> {
    await this.running;
  }

  private async run(): Promise<void> {
    while (this.waiting.length > 0) {
      const group = this.waiting.splice(0);
      if (group.length === 1) this.failQueued(await this.alone(group[0]!));
      else await this.together(group);
    }
    this.running = undefined;
  }

  /** Runs one call's transaction; returns its error when it failed. */
  private async alone(call: Waiting): Promise<unknown> {
    try {
      call.resolve(await this.transact(call.writes));
      return undefined;
    } catch (err) {
      call.reject(err);
      return err;
    }
  }

  /** After a call the database was out of reach for, the calls queued behind it fail too (see the class). */
  private failQueued(err: unknown): void {
    if (!(err instanceof StoreUnavailableError)) return;
    for (const call of this.waiting.splice(0)) call.reject(err);
  }

  private async together(group: Waiting[]): Promise<void> {
    let results: WriteResult[];
    try {
      results = await this.transact(group.flatMap((call) => call.writes));
    } catch (err) {
      // One call per transaction again, but only when the merged one surely rolled back: a lost
      // connection may have committed it, and applying its writes again would apply them twice.
      if (surelyRolledBack(err)) {
        for (const [i, call] of group.entries()) {
          const failure = await this.alone(call);
          // Out of reach again: the rest of the group waits with the queue (see the class).
          if (failure instanceof StoreUnavailableError) {
            // In call order: the committer holds what they carry in the order they settle.
            for (const later of group.slice(i + 1)) later.reject(failure);
            this.failQueued(failure);
            return;
          }
        }
      } else {
        for (const call of group) call.reject(err);
        this.failQueued(err);
      }
      return;
    }
    let start = 0;
    for (const call of group) {
      call.resolve(results.slice(start, (start += call.writes.length)));
    }
  }
}

/**
 * Our own refusal to go on (an unknown agent), or an error the server reported in a live session.
 * Not a database out of reach (it may have committed before the connection broke), whatever its class.
 */
function surelyRolledBack(err: unknown): boolean {
  if (err instanceof StoreUnavailableError) return false;
  return err instanceof AgentsError || (err instanceof pg.DatabaseError && err.severity === 'ERROR');
}
