// A closed runtime says so: after `runtime.close()` every command and query rejects (or, `watch`,
// throws) a RuntimeClosedError (`runtime_closed`, a 503 over HTTP) instead of reaching the closed
// store with whatever error that would give.
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { AgentsError, RuntimeClosedError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';
import type { AppEnv } from '../../src/http/env.js';
import { createErrorHandler } from '../../src/http/middleware/error-handler.js';
import { isIdleWithProgress, startRuntime, waitForView } from '../helpers/runtime.js';

describe('a closed runtime', () => {
  it('rejects every command and query with a RuntimeClosedError that says the runtime is closed', async () => {
    const { runtime } = await startRuntime();
    await runtime.spawn('agent', { id: 'a1', input: { tasks: ['Summarize the report'] } });
    const view = await waitForView(runtime, 'a1', isIdleWithProgress(1));
    const row = await runtime.agentOrThrow('a1');
    await runtime.close();

    const calls: Record<string, () => Promise<unknown>> = {
      spawn: () => runtime.spawn('agent', { id: 'a2' }),
      send: () => runtime.send('a1', { type: 'task.add', task: 'Extract the entities' }),
      report: () => runtime.report('a1', { type: 'agent.done', agentId: 'c1', output: null }),
      stop: () => runtime.stop('a1'),
      fork: () => runtime.fork('a1', 1, 'a1-fork'),
      view: () => runtime.view('a1'),
      viewOf: () => runtime.viewOf(row),
      list: () => runtime.list({ limit: 10 }),
      agents: () => runtime.agents({ limit: 10 }),
      agentOrThrow: () => runtime.agentOrThrow('a1'),
      checkpoints: () => runtime.checkpoints('a1'),
      checkpoint: () => runtime.checkpoint('a1', 1),
      prunedBefore: () => runtime.prunedBefore('a1'),
      actions: () => runtime.actions('a1'),
      stats: () => runtime.stats(),
      storeBytes: () => runtime.storeBytes(),
      openEventFeed: () => runtime.openEventFeed('a1', undefined, () => undefined),
      waitFor: () => runtime.waitFor('a1', () => true),
      prune: () => runtime.prune(),
      recover: () => runtime.recover(),
    };
    for (const [name, call] of Object.entries(calls)) {
      const err = await call().then(
        () => new Error(`${name} resolved`),
        (e: unknown) => e,
      );
      expect(err, name).toBeInstanceOf(RuntimeClosedError);
      expect(err, name).toBeInstanceOf(AgentsError);
      expect((err as RuntimeClosedError).code, name).toBe('runtime_closed');
      expect((err as Error).message, name).toMatch(/^Cannot .+: the runtime is closed\.$/);
    }
    expect(() => runtime.watch('a1', () => undefined)).toThrow(RuntimeClosedError);
    await expect(runtime.send('a1', { type: 'task.add', task: 'x' })).rejects.toThrow('Cannot send to an agent: the runtime is closed.');

    // What needs no store still answers; closing again is a no-op.
    expect(runtime.machine('agent').name).toBe('agent');
    expect(runtime.acceptedEvents(view)).toEqual(expect.arrayContaining(['task.add']));
    await expect(runtime.close()).resolves.toBeUndefined();
  });

  it('is a 503 runtime_closed over HTTP', async () => {
    const app = new Hono<AppEnv>();
    app.onError(createErrorHandler(silentLogger));
    app.get('/agents/a1', () => {
      throw new RuntimeClosedError('view an agent');
    });
    const res = await app.request('/agents/a1');
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: { code: 'runtime_closed', message: 'Cannot view an agent: the runtime is closed.' } });
  });
});
