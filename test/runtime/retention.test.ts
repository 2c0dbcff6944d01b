/**
 * Retention through the runtime: agents that keep working under a policy, on a real SQLite file.
 * The file's pages in use level off; what restore, a kept checkpoint or a fork needs stays.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import { PrunedError } from '../../src/core/errors.js';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { parsePrometheus, valueOf } from '../observability/prom-text.js';

/**
 * A worker whose every step replaces a ~1.5 KB note and rolls a window of its last 24 lines (an
 * array long enough to be stored in chunks): its state stays the same size while its history grows.
 */
const WINDOW = 24;
const roller = setup({
  types: { context: {} as { step: number; note: string; lines: { step: number; text: string }[] }, events: {} as { type: 'step' } },
}).createMachine({
  id: 'roller',
  context: { step: 0, note: '', lines: [] },
  on: {
    step: {
      actions: assign(({ context }) => {
        const step = context.step + 1;
        const line = { step, text: `line ${step}: ${'lorem ipsum dolor '.repeat(8)}` };
        return { step, note: `note ${step} ${'sit amet consectetur '.repeat(70)}`, lines: [...context.lines, line].slice(-WINDOW) };
      }),
    },
  },
});
const rollerDefinition: MachineDefinition = { name: 'roller', machine: roller };
const AGENTS = 6;
const STEPS_PER_ROUND = 30;

describe('retention', () => {
  const start = runtimesClosedAfterEach();

  it('keeps the file from growing while agents keep working, and keeps what restore and a fork need', { timeout: 120_000 }, async () => {
    const keepCheckpoints = 10;
    // Passivation: resting agents leave memory, so the pruner may collect their parts too.
    const t = await start({ machines: [rollerDefinition], retention: { keepCheckpoints, everyMs: 3_600_000 }, passivateAfterMs: 1 });
    const ids = Array.from({ length: AGENTS }, (_, i) => `roller-${i}`);
    for (const id of ids) await t.runtime.spawn('roller', { id });
    const used: number[] = [];
    for (let round = 1; round <= 12; round++) {
      for (const id of ids) {
        for (let i = 0; i < STEPS_PER_ROUND; i++) await t.runtime.send(id, { type: 'step' });
        await waitForView(t.runtime, id, (v) => (v.context as { step: number }).step === round * STEPS_PER_ROUND);
      }
      await new Promise((resolve) => setTimeout(resolve, 20)); // the agents rest and leave memory
      // As if a few minutes passed: parts are collected only for agents quiet for a minute.
      await t.runtime.prune(Date.now() + 180_000);
      used.push(await t.store.sizeBytes());
      if (process.env.SHOW_SIZES) console.log(`round ${round}: ${used.at(-1)} bytes of pages in use`);
    }
    // Each round writes ~180 checkpoints of ~1.5 KB notes; kept: 10 per agent. Levels off: the last
    // six rounds grew the pages in use by less than a tenth of what round 1 took.
    expect(used.at(-1)! - used[5]!, `pages in use by round: ${used.join(', ')}`).toBeLessThan(used[0]! / 10);
    expect(fs.statSync(t.file!).size).toBeLessThan(4 * used[0]!);

    const last = 12 * STEPS_PER_ROUND + 1; // seq 1 is the initial snapshot
    const history = await t.runtime.checkpoints('roller-0');
    expect(history.at(-1)?.seq).toBe(last);
    const prunedBefore = await t.runtime.prunedBefore('roller-0');
    expect(prunedBefore).toBeGreaterThan(last - 40);
    expect(prunedBefore).toBeLessThanOrEqual(last - keepCheckpoints + 1);
    expect(history[0]?.seq).toBe(prunedBefore);

    // Every kept checkpoint reads back whole; the pruned ones are gone for good, and say so.
    for (const { seq } of history) {
      const { snapshot } = await t.runtime.checkpoint('roller-0', seq);
      expect((snapshot.context as { step: number }).step).toBe(seq - 1);
    }
    await expect(t.runtime.checkpoint('roller-0', prunedBefore - 1)).rejects.toBeInstanceOf(PrunedError);
    await expect(t.runtime.fork('roller-0', 1, 'from-pruned')).rejects.toMatchObject({ code: 'checkpoint_pruned' });

    // A fork from the oldest kept checkpoint, and a restart of the whole runtime, both work on.
    const fork = await t.runtime.fork('roller-0', prunedBefore, 'from-kept');
    expect((fork.context as { step: number }).step).toBe(prunedBefore - 1);
    await t.runtime.close();
    const again = await start({ file: t.file!, machines: [rollerDefinition] });
    for (const id of ids) {
      await again.runtime.send(id, { type: 'step' });
      const view = await waitForView(again.runtime, id, (v) => (v.context as { step: number }).step === last);
      expect((view.context as { lines: unknown[] }).lines).toHaveLength(WINDOW);
    }
  });

  it("prunes by a machine's own policy where the runtime has none, and counts it in the metrics", async () => {
    const metrics = createMetrics();
    const kept = { ...rollerDefinition, name: 'kept' };
    const trimmed: MachineDefinition = { ...rollerDefinition, name: 'trimmed', retention: { keepCheckpoints: 3 } };
    const t = await start({ machines: [kept, trimmed], observer: metrics.observer });
    metrics.observeRuntime(t.runtime);
    await t.runtime.spawn('kept', { id: 'k' });
    await t.runtime.spawn('trimmed', { id: 't' });
    for (const id of ['k', 't']) {
      for (let i = 0; i < 12; i++) await t.runtime.send(id, { type: 'step' });
      await waitForView(t.runtime, id, (v) => (v.context as { step: number }).step === 12);
    }
    await t.runtime.prune();
    expect(await t.runtime.prunedBefore('k')).toBe(0);
    expect((await t.runtime.checkpoints('k')).length).toBe(13);
    expect(await t.runtime.prunedBefore('t')).toBeGreaterThan(1);
    expect((await t.runtime.checkpoints('t')).length).toBeLessThanOrEqual(13 - 9 + 1);
    const samples = parsePrometheus(await metrics.render());
    expect(valueOf(samples, 'durable_agents_pruned_rows_total', { what: 'checkpoints' })).toBe(13 - (await t.runtime.checkpoints('t')).length);
    expect(valueOf(samples, 'durable_agents_store_bytes')).toBe(await t.store.sizeBytes());
    expect(valueOf(samples, 'durable_agents_store_bytes')).toBeGreaterThan(0);
  });

  it('deletes agents that ended long enough ago, and leaves the others', async () => {
    const t = await start({ machines: [rollerDefinition], retention: { keepFinishedDays: 1, everyMs: 3_600_000 } });
    await t.runtime.spawn('roller', { id: 'gone' });
    await t.runtime.spawn('roller', { id: 'stays' });
    await t.runtime.stop('gone');
    await t.runtime.prune(); // ended just now: kept
    expect((await t.store.getAgent('gone'))?.status).toBe('stopped');
    await t.runtime.prune(Date.now() + 2 * 86_400_000);
    expect(await t.store.getAgent('gone')).toBeUndefined();
    expect((await t.store.getAgent('stays'))?.status).toBe('active');
  });
});
