// A Postgres store that goes out of reach mid-task (issue 23): the real database behind a TCP proxy
// the test cuts (every connection of the store dropped, new ones refused) and restores. The
// checkpoint that holds the LLM's answer is held and retried with backoff, requests fail fast with
// store_unavailable, and once the database is reachable again the agent goes on by itself, its LLM
// asked once.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { freshSchema, postgresUrl } from '../helpers/postgres.js';
import { isIdleWithProgress, recordingLlm, runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

let proxy: TcpProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
});
// After the hook above, so it runs first: the runtime closes before its proxy.
const startRuntime = runtimesClosedAfterEach();

describe('a Postgres store out of reach (real Postgres behind a proxy)', () => {
  it('holds the checkpoint of an answer while the database cannot be reached, and commits it once it can', async () => {
    const upstream = new URL(postgresUrl);
    proxy = await startTcpProxy({ host: upstream.hostname, port: Number(upstream.port) });
    const throughProxy = new URL(postgresUrl);
    throughProxy.host = `${proxy.host}:${proxy.port}`;
    // A lease far longer than the outage: this is about held writes, not about losing the agents.
    const store = await openPostgresStore(throughProxy.toString(), { schema: freshSchema(), leaseMs: 120_000 });

    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const recorder = recordingLlm(async (request) => {
      await answered;
      return `answer to ${request.messages.at(-1)?.content as string}`;
    });
    const { runtime, logs } = await startRuntime({
      store,
      llm: recorder.llm,
      storeRetry: { baseDelayMs: 20, maxDelayMs: 200, seed: 5 },
      reloadDelayMs: 10,
      logs: 'captured',
    });
    await runtime.spawn('agent', { id: 'p1', input: { tasks: ['t1'] } });
    await vi.waitFor(() => expect(recorder.calls).toHaveLength(1), { timeout: 10_000, interval: 10 });

    proxy.cut();
    answer();
    // The answer's checkpoint cannot be committed: held, and retried after a backoff, several times.
    await vi.waitFor(
      () => {
        const readiness = runtime.storeReadiness();
        expect(readiness).toMatchObject({ ready: false, reason: 'database_unreachable' });
        expect(readiness.ready === false && readiness.attempts).toBeGreaterThanOrEqual(4);
        expect(readiness.heldWrites).toBeGreaterThan(0);
      },
      { timeout: 20_000, interval: 20 },
    );
    const refused = await runtime.send('p1', { type: 'task.add', task: 't2' }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(StoreUnavailableError);
    expect(refused).toMatchObject({ code: 'store_unavailable', reason: 'database_unreachable' });
    expect((refused as StoreUnavailableError).retryAfterMs).toBeGreaterThan(0);
    expect(recorder.calls).toHaveLength(1);

    proxy.restore();
    await waitForView(runtime, 'p1', isIdleWithProgress(1), 20_000);
    expect(recorder.calls).toHaveLength(1);
    expect(runtime.storeReadiness()).toEqual({ ready: true, heldWrites: 0 });
    // Committed once: its checkpoints in order, the answer's among them.
    const states = (await store.listCheckpoints('p1')).map((c) => c.state);
    expect(states).toEqual([{ callingLLM: 'requesting' }, 'persisted', { sideEffect: 'requesting' }, 'idle']);
    expect(logs.filter((l) => l.msg === 'the store takes writes again')).toHaveLength(1);
    expect(logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('checkpoint commit failed'))).toEqual([]);
  });
});
