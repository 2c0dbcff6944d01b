// (Long: the whole contract every store passes, kept as one suite so that no store skips a rule.)
/**
 * The behaviour every Store must have, whatever its database. Each backend's test file runs this
 * suite against a fresh store of its own.
 */
import { describe, expect, it } from 'vitest';
import { ConflictError, FencedError, IdempotencyKeyReusedError, InvalidInputError, NotFoundError } from '../../src/core/errors.js';
import { CheckpointEncoder } from '../../src/store/checkpoint-encoding.js';
import { eventBodyHash } from '../../src/store/event-hash.js';
import type { AppendResult, InboxEvent, Store, Write, WriteResult } from '../../src/store/store.js';

const at = (ms = 0) => new Date(Date.UTC(2026, 10, 30, 5, 41, 7, ms)).toISOString();

/**
 * Commits one event on its own (the runtime batches events through its group committer instead):
 * its seq, or the refusal thrown (unknown agent, agent not active).
 */
export async function appendEvent(store: Store, agentId: string, event: InboxEvent, idempotencyKey?: string): Promise<AppendResult> {
  const [result] = await store.commit([
    { kind: 'event', agentId, event, idempotencyKey: idempotencyKey ?? null, at: new Date().toISOString() },
  ]);
  if (result && 'refused' in result) throw result.refused;
  if (!result) throw new Error('The store returned no result for an event write.');
  return result;
}

export function checkpoint(agentId: string, seq: number, extra: Partial<Extract<Write, { kind: 'checkpoint' }>> = {}): Write {
  return {
    kind: 'checkpoint',
    agentId,
    seq,
    inboxPosition: 0,
    createdAt: at(seq),
    machineVersion: '1',
    eventType: seq === 1 ? 'xstate.init' : 'step',
    state: `s${seq}`,
    status: 'active',
    progress: seq,
    snapshot: JSON.stringify({ status: 'active', value: `s${seq}`, context: { n: seq }, children: {}, historyValue: {} }),
    actions: [],
    ...extra,
  };
}

/**
 * Writes `n` checkpoints of a growing conversation as the runtime does (parts, deltas, actions and
 * effects that refer to parts, some batches holding several checkpoints), and the JSON each one
 * must read back as.
 */
async function talk(store: Store, agentId: string, n: number): Promise<Map<number, string>> {
  return (await talkWithFormats(store, agentId, n)).expected;
}

const answerAt = (seq: number) => `answer ${seq}: ${'many words '.repeat(60)}`;

/** `talk`, and the formats its checkpoints were written in. */
async function talkWithFormats(store: Store, agentId: string, n: number): Promise<{ expected: Map<number, string>; formats: Set<string> }> {
  const formats = new Set<string>();
  const encoder = new CheckpointEncoder();
  const settings = Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`setting${i}`, i]));
  let context: Record<string, unknown> = { ...settings, messages: [], turn: 0 };
  const expected = new Map<number, string>();
  const answer = answerAt;
  let batch: Write[] = [];
  for (let seq = 1; seq <= n; seq++) {
    const message = { role: seq % 2 ? 'user' : 'assistant', content: seq % 3 ? `short ${seq}` : answer(seq) };
    context = { ...context, messages: [...(context.messages as unknown[]), message], turn: seq };
    const snapshot = { status: 'active', value: `s${seq}`, historyValue: {}, context, children: {} };
    const encoded = encoder.encode(snapshot, seq);
    formats.add(encoded.format);
    expected.set(seq, JSON.stringify(snapshot));
    // The action log and the effects refer to the same parts: the exchange, the answer.
    const values = { payload: { id: 'llm', input: { messages: context.messages } }, result: { ok: true, output: { content: answer(seq) } } };
    const payload = encoder.encodeValue(values.payload);
    const result = encoder.encodeValue(values.result);
    const effectResult = { delivered: true, response: answer(seq) };
    const effect = encoder.encodeValue(effectResult);
    batch.push(
      checkpoint(agentId, seq, {
        snapshot: encoded.text, format: encoded.format, ...(encoded.baseSeq ? { baseSeq: encoded.baseSeq } : {}),
        parts: [...encoded.parts, ...payload.parts, ...result.parts],
        actions: [{ action: 'callLlm', ...values, stored: { payload: payload.text, result: result.text } }],
      }),
      { kind: 'effect', agentId, seq, idempotencyKey: `${agentId}:${seq}`, result: effectResult, stored: effect.text, parts: effect.parts, createdAt: at(seq) },
    );
    // Some batches hold several checkpoints of the agent (and a part twice), as group commit does.
    if (seq % 4 !== 1) {
      await store.commit(batch);
      batch = [];
    }
  }
  await store.commit(batch);
  return { expected, formats };
}

export function storeContract(name: string, open: () => Promise<Store>) {
  describe(`${name} store contract`, () => {
    const newAgent = (id: string, machine = 'agent') => ({ id, machine, machineVersion: '1', input: { tasks: ['t'] }, createdAt: at() });

    it('creates an agent once and returns the existing row for the same id', async () => {
      const store = await open();
      const first = await store.createAgent(newAgent('a1'));
      const second = await store.createAgent(newAgent('a1', 'other'));
      expect(first.created).toBe(true);
      expect(second.created).toBe(false);
      expect(second.agent).toMatchObject({ id: 'a1', machine: 'agent', status: 'active', lastSeq: 0 });
      // The spawn input is kept apart from the row every transition rewrites, and read on its own.
      expect(second.agent).not.toHaveProperty('input');
      expect(await store.getInput('a1')).toEqual({ tasks: ['t'] });
      expect(await store.getInput('nobody')).toBeUndefined();
      await store.close();
    });

    it('numbers inbox events per agent and de-duplicates by idempotency key', async () => {
      const store = await open();
      await store.createAgent(newAgent('a1'));
      await store.createAgent(newAgent('a2'));
      expect(await appendEvent(store, 'a1', { type: 'x' })).toEqual({ seq: 1, duplicate: false });
      expect(await appendEvent(store, 'a1', { type: 'y', v: 1 }, 'k1')).toEqual({ seq: 2, duplicate: false });
      expect(await appendEvent(store, 'a1', { type: 'y', v: 2 }, 'k1')).toEqual({ seq: 2, duplicate: true });
      expect(await appendEvent(store, 'a2', { type: 'z' }, 'k1')).toEqual({ seq: 1, duplicate: false });
      const events = await store.eventsAfter('a1', 0);
      expect(events.map((e) => [e.seq, e.event])).toEqual([[1, { type: 'x' }], [2, { type: 'y', v: 1 }]]);
      expect(await store.eventsAfter('a1', 1)).toHaveLength(1);
      await store.close();
    });

    it('refuses events for unknown and inactive agents, but still answers a repeated key', async () => {
      const store = await open();
      await expect(appendEvent(store, 'nobody', { type: 'x' })).rejects.toBeInstanceOf(NotFoundError);
      await store.createAgent(newAgent('a1'));
      await appendEvent(store, 'a1', { type: 'x' }, 'k');
      await store.commit([{ kind: 'status', agentId: 'a1', status: 'stopped', error: null, at: at() }]);
      await expect(appendEvent(store, 'a1', { type: 'x' })).rejects.toBeInstanceOf(ConflictError);
      expect(await appendEvent(store, 'a1', { type: 'x' }, 'k')).toEqual({ seq: 1, duplicate: true });
      await store.close();
    });

    it('refuses one event in a batch without failing the other writes', async () => {
      const store = await open();
      await store.createAgent(newAgent('a1'));
      const ev = (agentId: string, key: string | null = null): Write => ({ kind: 'event', agentId, event: { type: 'x' }, idempotencyKey: key, at: at() });
      const results = await store.commit([ev('a1', 'k'), ev('ghost'), checkpoint('a1', 1), ev('a1', 'k'), ev('a1')]);
      expect(results[0]).toEqual({ seq: 1, duplicate: false });
      expect(results[1]).toMatchObject({ refused: expect.any(NotFoundError) });
      expect(results[2]).toBeUndefined();
      expect(results[3]).toEqual({ seq: 1, duplicate: true });
      expect(results[4]).toEqual({ seq: 2, duplicate: false });
      expect(await store.getAgent('a1')).toMatchObject({ lastSeq: 1, eventSeq: 2 });
      await store.close();
    });

    it('refuses a key used again for another body when both carry a hash, in one batch or later, also once pruning cut the body; without a hash the key alone decides', async () => {
      const store = await open();
      await store.createAgent(newAgent('a1'));
      const ev = (event: InboxEvent, key: string, hashed = true): Write => ({
        kind: 'event', agentId: 'a1', event, idempotencyKey: key, ...(hashed ? { bodyHash: eventBodyHash(event) } : {}), at: at(),
      });
      const reused = { refused: expect.any(IdempotencyKeyReusedError) };
      // Another payload in the same batch is refused; the same body with its keys in another order is the same event.
      expect(await store.commit([ev({ type: 'x', v: 1 }, 'k'), ev({ type: 'x', v: 2 }, 'k'), ev({ v: 1, type: 'x' }, 'k')])).toEqual([
        { seq: 1, duplicate: false },
        reused,
        { seq: 1, duplicate: true },
      ]);
      // Another type, or payload, in a later batch.
      expect(await store.commit([ev({ type: 'y', v: 1 }, 'k'), ev({ type: 'x', v: 1, w: 0 }, 'k'), ev({ type: 'x', v: 1 }, 'k')])).toEqual([
        reused,
        reused,
        { seq: 1, duplicate: true },
      ]);
      // Without a hash (the runtime's own reports) the key alone decides, and a key kept without one answers any body.
      expect(await store.commit([ev({ type: 'x', v: 3 }, 'k', false)])).toEqual([{ seq: 1, duplicate: true }]);
      await store.commit([ev({ type: 'r', v: 1 }, 'report', false)]);
      expect(await store.commit([ev({ type: 'r', v: 2 }, 'report')])).toEqual([{ seq: 2, duplicate: true }]);
      expect(await store.getAgent('a1')).toMatchObject({ eventSeq: 2 });
      // Pruning cuts a consumed keyed event to its type: the hash kept with its key still tells another body apart.
      await store.commit([checkpoint('a1', 1, { inboxPosition: 2 }), checkpoint('a1', 2, { inboxPosition: 2 })]);
      await store.pruneHistory('a1', { keepNewest: 1 }, { parts: true });
      expect((await store.eventsAfter('a1', 0))[0]).toMatchObject({ seq: 1, event: { type: 'x' } });
      expect(await store.commit([ev({ type: 'x', v: 1 }, 'k'), ev({ type: 'x' }, 'k')])).toEqual([{ seq: 1, duplicate: true }, reused]);
      expect(await store.getAgent('a1')).toMatchObject({ eventSeq: 2 });
      await store.close();
    });

    it('commits checkpoints with their action rows and moves the agent row along', async () => {
      const store = await open();
      await store.createAgent(newAgent('a1'));
      await store.commit([
        checkpoint('a1', 1),
        checkpoint('a1', 2, { inboxPosition: 3, actions: [{ action: 'callLlm', payload: { task: 't' }, result: { ok: true } }] }),
      ]);
      const agent = await store.getAgent('a1');
      expect(agent).toMatchObject({ lastSeq: 2, inboxPosition: 3, state: 's2', progress: 2, updatedAt: at(2) });
      expect((await store.listCheckpoints('a1')).map((c) => [c.seq, c.state, c.eventType])).toEqual([
        [1, 's1', 'xstate.init'],
        [2, 's2', 'step'],
      ]);
      expect(await store.getCheckpoint('a1', 2)).toMatchObject({ seq: 2, machineVersion: '1', snapshot: expect.stringContaining('"n":2') });
      expect(await store.getCheckpoint('a1', 3)).toBeUndefined();
      expect(await store.listActions('a1')).toEqual([
        { seq: 2, action: 'callLlm', payload: { task: 't' }, result: { ok: true }, createdAt: at(2) },
      ]);
      await store.close();
    });

    it('reads only the newest checkpoints and actions when asked, still oldest first', async () => {
      const store = await open();
      await store.createAgent(newAgent('a1'));
      const act = [{ action: 'callLlm', payload: null, result: null }];
      await store.commit([checkpoint('a1', 1), checkpoint('a1', 2, { actions: act }), checkpoint('a1', 3), checkpoint('a1', 4, { actions: act })]);
      expect((await store.listCheckpoints('a1', { newest: 2 })).map((c) => c.seq)).toEqual([3, 4]);
      expect((await store.listCheckpoints('a1', { newest: 10 })).map((c) => c.seq)).toEqual([1, 2, 3, 4]);
      expect((await store.listActions('a1', { newest: 1 })).map((a) => a.seq)).toEqual([4]);
      expect((await store.listActions('a1')).map((a) => a.seq)).toEqual([2, 4]);
      await store.close();
    });

    it('applies a whole batch or nothing of it', async () => {
      const store = await open();
      await store.createAgent(newAgent('a1'));
      await store.createAgent(newAgent('a2'));
      await store.commit([checkpoint('a1', 1)]);
      // The second write repeats (a1, 1): the whole batch, a2's checkpoint included, must roll back.
      await expect(store.commit([checkpoint('a2', 1), checkpoint('a1', 1)])).rejects.toThrow();
      expect(await store.listCheckpoints('a2')).toEqual([]);
      expect(await store.getAgent('a2')).toMatchObject({ lastSeq: 0, state: null });
      expect(await store.listCheckpoints('a1')).toHaveLength(1);
      await store.close();
    });

    it('refuses a checkpoint for an unknown agent and rolls its whole batch back', async () => {
      const store = await open();
      await store.createAgent(newAgent('a1'));
      await expect(store.commit([checkpoint('a1', 1), checkpoint('ghost', 1)])).rejects.toBeInstanceOf(NotFoundError);
      expect(await store.getAgent('ghost')).toBeUndefined();
      expect(await store.getCheckpoint('ghost', 1)).toBeUndefined();
      expect(await store.listCheckpoints('a1')).toEqual([]);
      expect(await store.getAgent('a1')).toMatchObject({ lastSeq: 0, state: null });
      await store.close();
    });

    it.each(['consume', 'effect', 'status'] as const)('refuses a %s write for an unknown agent and rolls its whole batch back', async (kind) => {
      const store = await open();
      await store.createAgent(newAgent('a1'));
      const ghost: Write =
        kind === 'consume'
          ? { kind, agentId: 'ghost', inboxPosition: 1, at: at() }
          : kind === 'effect'
            ? { kind, agentId: 'ghost', seq: 1, idempotencyKey: 'ghost:1', result: null, createdAt: at() }
            : { kind, agentId: 'ghost', status: 'stopped', error: null, at: at() };
      await expect(store.commit([checkpoint('a1', 1), ghost])).rejects.toBeInstanceOf(NotFoundError);
      // The batch rolled back: a1's checkpoint is gone with it, and no row was made for the ghost.
      expect(await store.listCheckpoints('a1')).toEqual([]);
      expect(await store.getAgent('a1')).toMatchObject({ lastSeq: 0, state: null });
      expect(await store.getAgent('ghost')).toBeUndefined();
      if (kind === 'effect') expect(await store.findEffect('ghost:1')).toBeUndefined();
      await store.close();
    });

    const refusedAs = (result: WriteResult) => (result && 'refused' in result ? `${result.refused.name}: ${result.refused.message}` : result);
    const fencedFor = (agentId: string, status: string) => `FencedError: ${new FencedError(agentId, `is ${status}`).message}`;

    it('refuses a checkpoint, consume and effect for a stopped agent: it stays stopped, and the other writes land', async () => {
      const store = await open();
      await store.createAgent(newAgent('a1'));
      await store.createAgent(newAgent('a2'));
      await store.commit([checkpoint('a1', 1), { kind: 'status', agentId: 'a1', status: 'stopped', error: null, at: at(5) }]);
      const results = await store.commit([
        checkpoint('a1', 2, { inboxPosition: 3 }),
        { kind: 'consume', agentId: 'a1', inboxPosition: 4, at: at(6) },
        { kind: 'effect', agentId: 'a1', seq: 2, idempotencyKey: 'a1:2', result: { ok: true }, createdAt: at(6) },
        checkpoint('a2', 1),
      ]);
      expect(results.map(refusedAs)).toEqual([fencedFor('a1', 'stopped'), fencedFor('a1', 'stopped'), fencedFor('a1', 'stopped'), undefined]);
      expect(results[0]).toMatchObject({ refused: expect.any(FencedError) });
      expect(await store.getAgent('a1')).toMatchObject({ status: 'stopped', lastSeq: 1, state: 's1', inboxPosition: 0, updatedAt: at(5) });
      expect((await store.listCheckpoints('a1')).map((c) => c.seq)).toEqual([1]);
      expect(await store.findEffect('a1:2')).toBeUndefined();
      expect(await store.loadRestorable('a1')).toBeUndefined();
      expect(await store.getAgent('a2')).toMatchObject({ status: 'active', lastSeq: 1 });
      await store.close();
    });

    it('refuses a checkpoint for an agent that is done, in the batch that finished it and after', async () => {
      const store = await open();
      await store.createAgent(newAgent('a1'));
      const finishing = await store.commit([checkpoint('a1', 1), checkpoint('a1', 2, { status: 'done' }), checkpoint('a1', 3)]);
      expect(finishing.map(refusedAs)).toEqual([undefined, undefined, fencedFor('a1', 'done')]);
      expect((await store.commit([checkpoint('a1', 3)])).map(refusedAs)).toEqual([fencedFor('a1', 'done')]);
      expect(await store.getAgent('a1')).toMatchObject({ status: 'done', lastSeq: 2, state: 's2' });
      expect((await store.listCheckpoints('a1')).map((c) => [c.seq, c.status])).toEqual([[1, 'active'], [2, 'done']]);
      expect(await store.stats()).toMatchObject({ agentsByStatus: { active: 0, done: 1, error: 0, stopped: 0 } });
      await store.close();
    });

    it('never changes an ended agent back: a stop leaves it as it is, another status is refused, an error is recorded after its error checkpoint', async () => {
      const store = await open();
      for (const id of ['done', 'stopped', 'failed']) await store.createAgent(newAgent(id));
      const boom = { name: 'Error', message: 'boom' };
      await store.commit([
        checkpoint('done', 1, { status: 'done' }),
        { kind: 'status', agentId: 'stopped', status: 'stopped', error: null, at: at(1) },
        checkpoint('failed', 1, { status: 'error' }),
        // The runtime records the error that ended it right after that checkpoint.
        { kind: 'status', agentId: 'failed', status: 'error', error: boom, at: at(2) },
      ]);
      const results = await store.commit([
        { kind: 'status', agentId: 'done', status: 'stopped', error: null, at: at(3) },
        { kind: 'status', agentId: 'stopped', status: 'stopped', error: null, at: at(3) },
        { kind: 'status', agentId: 'stopped', status: 'active', error: null, at: at(3) },
        { kind: 'status', agentId: 'done', status: 'error', error: boom, at: at(3) },
        { kind: 'status', agentId: 'failed', status: 'active', error: null, at: at(3) },
      ]);
      expect(results.map(refusedAs)).toEqual([undefined, undefined, fencedFor('stopped', 'stopped'), fencedFor('done', 'done'), fencedFor('failed', 'error')]);
      expect(await store.getAgent('done')).toMatchObject({ status: 'done', error: null, updatedAt: at(1) });
      expect(await store.getAgent('stopped')).toMatchObject({ status: 'stopped', updatedAt: at(1) });
      expect(await store.getAgent('failed')).toMatchObject({ status: 'error', error: boom, updatedAt: at(2) });
      await expect(appendEvent(store, 'failed', { type: 'x' })).rejects.toBeInstanceOf(ConflictError);
      await store.close();
    });

    it('records an effect once under its key', async () => {
      const store = await open();
      await store.createAgent(newAgent('a1'));
      const effect = (result: unknown): Write => ({ kind: 'effect', agentId: 'a1', seq: 1, idempotencyKey: 'a1:1', result, createdAt: at() });
      await store.commit([effect({ status: 200 })]);
      await store.commit([effect({ status: 201 })]);
      expect(await store.findEffect('a1:1')).toMatchObject({ agentId: 'a1', seq: 1, result: { status: 200 } });
      expect(await store.findEffect('a1:2')).toBeUndefined();
      await store.close();
    });

    it('advances the inbox position for ignored events without a checkpoint', async () => {
      const store = await open();
      await store.createAgent(newAgent('a1'));
      await store.commit([{ kind: 'consume', agentId: 'a1', inboxPosition: 4, at: at() }]);
      expect(await store.getAgent('a1')).toMatchObject({ inboxPosition: 4, lastSeq: 0 });
      await store.close();
    });

    it('pages agents in creation order with filters and an opaque cursor', async () => {
      const store = await open();
      for (const id of ['c', 'a', 'b', 'd']) await store.createAgent(newAgent(id, id === 'd' ? 'other' : 'agent'));
      await store.commit([{ kind: 'status', agentId: 'b', status: 'stopped', error: null, at: at() }]);
      const first = await store.listAgents({ limit: 2 });
      expect(first.items.map((a) => a.id)).toEqual(['c', 'a']);
      const second = await store.listAgents({ limit: 2, cursor: first.nextCursor! });
      expect(second.items.map((a) => a.id)).toEqual(['b', 'd']);
      expect(second.nextCursor).toBeNull();
      expect((await store.listAgents({ limit: 10, machine: 'agent', status: 'active' })).items.map((a) => a.id)).toEqual(['c', 'a']);
      await expect(store.listAgents({ limit: 2, cursor: 'not-a-cursor' })).rejects.toBeInstanceOf(InvalidInputError);
      await store.close();
    });

    it('loads active agents with their last checkpoint for recovery', async () => {
      const store = await open();
      await store.createAgent(newAgent('fresh'));
      await store.createAgent(newAgent('busy'));
      await store.createAgent(newAgent('stopped'));
      await store.commit([
        checkpoint('busy', 1),
        checkpoint('busy', 2),
        { kind: 'status', agentId: 'stopped', status: 'stopped', error: null, at: at() },
      ]);
      const loaded = await store.loadActiveAgents();
      expect(loaded.map((r) => [r.agent.id, r.checkpoint?.seq])).toEqual([
        ['fresh', undefined],
        ['busy', 2],
      ]);
      // A fresh agent starts from its spawn input; one with a checkpoint from that checkpoint.
      expect(loaded[0]!.agent.input).toEqual(newAgent('fresh').input);
      expect(loaded[1]!.checkpoint?.snapshot).toBe((checkpoint('busy', 2) as { snapshot: string }).snapshot);
      await store.close();
    });

    it('can leave resting agents out of recovery unless events wait for them', async () => {
      const store = await open();
      for (const id of ['working', 'resting', 'resting-with-mail']) await store.createAgent(newAgent(id));
      await store.commit([
        checkpoint('working', 1, { resting: false }),
        checkpoint('resting', 1, { resting: true }),
        checkpoint('resting-with-mail', 1, { resting: true }),
      ]);
      await appendEvent(store, 'resting-with-mail', { type: 'task.add', task: 'x' });
      const ids = async (skipResting: boolean) => (await store.loadActiveAgents({ skipResting })).map((r) => r.agent.id);
      expect(await ids(true)).toEqual(['working', 'resting-with-mail']);
      expect(await ids(false)).toEqual(['working', 'resting', 'resting-with-mail']);
      await store.close();
    });

    it('keeps the delays pending after each checkpoint, restores them with the last one, and finds agents by their next deadline', async () => {
      const store = await open();
      for (const id of ['soon', 'later', 'none', 'stopped']) await store.createAgent(newAgent(id));
      const timer = (id: string, at: number) => ({ id, at, event: { type: `xstate.after.${id}` } });
      await store.commit([
        checkpoint('soon', 1, { resting: true, timers: [timer('b', 2_000), timer('a', 1_000)] }),
        checkpoint('later', 1, { resting: true, timers: [timer('c', 5_000)] }),
        checkpoint('none', 1, { resting: true, timers: [timer('d', 500)] }),
        checkpoint('stopped', 1, { resting: true, timers: [timer('e', 100)] }),
      ]);
      // A later checkpoint without delays clears the deadline; a stopped agent is woken for nothing.
      await store.commit([checkpoint('none', 2, { resting: true })]);
      await store.commit([{ kind: 'status', agentId: 'stopped', status: 'stopped', error: null, at: at(3) }]);
      expect(await store.dueAgents(1_000, 10)).toEqual([{ id: 'soon', wakeAt: 1_000 }]);
      expect(await store.dueAgents(10_000, 10)).toEqual([{ id: 'soon', wakeAt: 1_000 }, { id: 'later', wakeAt: 5_000 }]);
      expect(await store.dueAgents(10_000, 1)).toEqual([{ id: 'soon', wakeAt: 1_000 }]);
      expect((await store.loadRestorable('soon'))?.checkpoint?.timers).toEqual([timer('b', 2_000), timer('a', 1_000)]);
      expect((await store.loadRestorable('none'))?.checkpoint?.timers).toBeUndefined();
      expect((await store.loadActiveAgents()).find((a) => a.agent.id === 'later')?.checkpoint?.timers).toEqual([timer('c', 5_000)]);
      await store.close();
    });

    it("appends a checkpoint's outbox to other agents' inboxes in its transaction, once per key, and drops one for an agent that has ended", async () => {
      const store = await open();
      for (const id of ['sender', 'recipient', 'ended']) await store.createAgent(newAgent(id));
      await store.commit([{ kind: 'status', agentId: 'ended', status: 'stopped', error: null, at: at() }]);
      // Nothing else in the batch names the recipient: the store finds it from the outbox.
      const message = (n: number) => ({ to: 'recipient', event: { type: 'msg', n }, key: `sender:1:${n}` });
      const [taken] = await store.commit([
        checkpoint('sender', 1, { outbox: [message(0), message(1), { to: 'ended', event: { type: 'msg' }, key: 'sender:1:2' }] }),
      ]);
      expect(taken).toBeUndefined();
      // The same messages again (the transition committed again after a crash, under the same keys): none twice.
      await store.commit([checkpoint('sender', 2, { outbox: [message(0), message(1)] })]);
      expect((await store.eventsAfter('recipient', 0)).map((e) => [e.event, e.idempotencyKey])).toEqual([
        [{ type: 'msg', n: 0 }, 'sender:1:0'],
        [{ type: 'msg', n: 1 }, 'sender:1:1'],
      ]);
      expect(await store.eventsAfter('ended', 0)).toEqual([]);
      expect((await store.getAgent('sender'))?.lastSeq).toBe(2);
      await store.close();
    });

    it("creates a checkpoint's child agents in its transaction, once, with their parent, and lists a parent's children", async () => {
      const store = await open();
      await store.createAgent(newAgent('parent'));
      const child = (id: string) => ({ ...newAgent(id, 'worker'), input: { job: id }, parent: 'parent' });
      // The child takes an event in the same batch that spawns it (an outbox message to it).
      const [spawned, told] = await store.commit([
        checkpoint('parent', 1, {
          spawns: [child('parent:c1'), child('parent:c2')],
          outbox: [{ to: 'parent:c1', event: { type: 'hello' }, key: 'parent:1:0' }],
        }),
        { kind: 'event', agentId: 'parent:c2', event: { type: 'direct' }, idempotencyKey: null, at: at() },
      ]);
      expect(spawned).toBeUndefined();
      expect(told).toEqual({ seq: 1, duplicate: false });
      expect(await store.getAgent('parent:c1')).toMatchObject({ machine: 'worker', status: 'active', parent: 'parent', lastSeq: 0, eventSeq: 1 });
      expect(await store.getInput('parent:c2')).toEqual({ job: 'parent:c2' });
      expect((await store.eventsAfter('parent:c1', 0)).map((e) => e.event)).toEqual([{ type: 'hello' }]);
      expect((await store.loadRestorable('parent:c2'))?.agent).toMatchObject({ id: 'parent:c2', machine: 'worker', parent: 'parent', input: { job: 'parent:c2' } });
      expect((await store.getAgent('parent'))?.parent).toBeNull();
      // Spawning again (the transition re-run after a crash) changes nothing; a taken id is left as it is.
      await store.createAgent(newAgent('taken'));
      await store.commit([checkpoint('parent', 2, { spawns: [child('parent:c1'), { ...child('taken'), machine: 'other' }] })]);
      expect(await store.getAgent('parent:c1')).toMatchObject({ machine: 'worker', eventSeq: 1 });
      expect(await store.getAgent('taken')).toMatchObject({ machine: 'agent', parent: null });
      const children = await store.listAgents({ parent: 'parent', limit: 10 });
      expect(children.items.map((a) => a.id)).toEqual(['parent:c1', 'parent:c2']);
      expect((await store.listAgents({ parent: 'parent', limit: 1 })).nextCursor).not.toBeNull();
      // A refused checkpoint (the parent has ended) spawns nothing.
      await store.commit([{ kind: 'status', agentId: 'parent', status: 'stopped', error: null, at: at() }]);
      const [refused] = await store.commit([checkpoint('parent', 3, { spawns: [child('parent:c3')] })]);
      expect(refused).toMatchObject({ refused: expect.any(FencedError) });
      expect(await store.getAgent('parent:c3')).toBeUndefined();
      await store.close();
    });

    it('loads one active agent as recovery would, and nothing for others', async () => {
      const store = await open();
      for (const id of ['fresh', 'busy', 'stopped']) await store.createAgent(newAgent(id));
      await store.commit([
        checkpoint('busy', 1),
        checkpoint('busy', 2, { inboxPosition: 1, resting: true }),
        { kind: 'status', agentId: 'stopped', status: 'stopped', error: null, at: at() },
      ]);
      await appendEvent(store, 'busy', { type: 'x' });
      await appendEvent(store, 'busy', { type: 'y' });
      const all = await store.loadActiveAgents();
      const fresh = await store.loadRestorable('fresh');
      const busy = await store.loadRestorable('busy');
      expect(fresh).toEqual(all.find((r) => r.agent.id === 'fresh'));
      expect(busy).toEqual(all.find((r) => r.agent.id === 'busy'));
      expect(fresh).toMatchObject({ agent: { id: 'fresh', machine: 'agent', inboxPosition: 0, eventSeq: 0, input: newAgent('fresh').input } });
      expect(fresh?.checkpoint).toBeUndefined();
      expect(busy?.agent).toEqual({ id: 'busy', machine: 'agent', inboxPosition: 1, eventSeq: 2, createdAt: at() });
      expect(busy?.checkpoint).toMatchObject({ agentId: 'busy', seq: 2, eventType: 'step', createdAt: at(2), snapshot: (checkpoint('busy', 2) as { snapshot: string }).snapshot });
      // Restoring reads state and status from the snapshot: the columns are not loaded.
      expect(busy?.checkpoint).not.toHaveProperty('state');
      expect(busy?.checkpoint).not.toHaveProperty('status');
      expect(await store.loadRestorable('stopped')).toBeUndefined();
      expect(await store.loadRestorable('nobody')).toBeUndefined();
      await store.close();
    });

    it('counts agents by status and the events waiting in active inboxes', async () => {
      const store = await open();
      for (const id of ['a', 'b', 'c']) await store.createAgent(newAgent(id));
      await appendEvent(store, 'a', { type: 'x' });
      await appendEvent(store, 'a', { type: 'y' });
      await appendEvent(store, 'b', { type: 'x' });
      await store.commit([
        { kind: 'consume', agentId: 'a', inboxPosition: 1, at: at() },
        { kind: 'status', agentId: 'c', status: 'done', error: null, at: at() },
      ]);
      expect(await store.stats()).toEqual({ agentsByStatus: { active: 2, done: 1, error: 0, stopped: 0 }, inboxDepth: 2 });
      await store.close();
    });

    it('keeps checkpoints that store what changed, and reads each one back whole: history, restore, actions, effects, fork', async () => {
      const store = await open();
      await store.createAgent(newAgent('talker'));
      const { expected, formats } = await talkWithFormats(store, 'talker', 60);
      expect([...formats].sort()).toEqual(['delta', 'json', 'parts']); // json: before the first long answer
      for (const [seq, json] of expected) expect((await store.getCheckpoint('talker', seq))?.snapshot, `checkpoint ${seq}`).toBe(json);
      const restorable = await store.loadRestorable('talker');
      expect(restorable?.checkpoint?.snapshot).toBe(expected.get(60));
      expect(restorable?.checkpoint?.parts?.length).toBeGreaterThan(5);
      const [restoredOnStart] = (await store.loadActiveAgents()).filter((a) => a.agent.id === 'talker');
      expect(restoredOnStart?.checkpoint?.snapshot).toBe(expected.get(60));
      const actions = await store.listActions('talker', { newest: 1 });
      expect(actions[0]).toMatchObject({ payload: { input: { messages: (JSON.parse(expected.get(60)!) as { context: { messages: unknown } }).context.messages } }, result: { ok: true, output: { content: answerAt(60) } } });
      expect((await store.findEffect('talker:59'))?.result).toEqual({ delivered: true, response: answerAt(59) });
      // A fork starts from any checkpoint's whole snapshot, a delta's too.
      const from = (await store.getCheckpoint('talker', 58))!;
      const { agent } = await store.createAgent({ ...newAgent('talker-fork'), snapshot: { ...from, status: 'active' } });
      expect(agent).toMatchObject({ lastSeq: 1 });
      expect((await store.getCheckpoint('talker-fork', 1))?.snapshot).toBe(expected.get(58));
      await store.close();
    });

    it('prunes what a retention rule does not keep: never the last checkpoint, a kept delta\'s chain, or a part anything kept refers to', async () => {
      const store = await open();
      await store.createAgent(newAgent('long'));
      const expected = await talk(store, 'long', 60);
      const result = await store.pruneHistory('long', { keepNewest: 5 }, { parts: true });
      // The oldest kept is checkpoint 56 or the whole checkpoint its chain starts at.
      expect(result.prunedBefore).toBeGreaterThan(24);
      expect(result.prunedBefore).toBeLessThanOrEqual(56);
      expect(result.checkpoints).toBe(result.prunedBefore - 1);
      expect(result.actions).toBe(result.prunedBefore - 1);
      expect(result.parts).toBeGreaterThan(0);
      expect((await store.getAgent('long'))?.prunedBefore).toBe(result.prunedBefore);
      expect((await store.listCheckpoints('long'))[0]?.seq).toBe(result.prunedBefore);
      expect(await store.getCheckpoint('long', result.prunedBefore - 1)).toBeUndefined();
      for (let seq = result.prunedBefore; seq <= 60; seq++) expect((await store.getCheckpoint('long', seq))?.snapshot, `checkpoint ${seq}`).toBe(expected.get(seq));
      expect((await store.loadRestorable('long'))?.checkpoint?.snapshot).toBe(expected.get(60));
      expect((await store.listActions('long')).map((a) => a.seq)[0]).toBe(result.prunedBefore);
      expect((await store.findEffect('long:60'))?.result).toMatchObject({ delivered: true });
      // Nothing more to prune under the same rule; a rule that keeps more prunes nothing either.
      expect(await store.pruneHistory('long', { keepNewest: 5 }, { parts: true })).toMatchObject({ checkpoints: 0, parts: 0 });
      expect(await store.pruneHistory('long', { keepNewest: 50 }, { parts: true })).toMatchObject({ checkpoints: 0 });
      // By time: everything was written at `at(seq)`; keep those since checkpoint 59's.
      const byTime = await store.pruneHistory('long', { keepSince: at(59) }, { parts: false });
      expect(byTime.prunedBefore).toBeLessThanOrEqual(59);
      expect((await store.getCheckpoint('long', 60))?.snapshot).toBe(expected.get(60));
      expect(await store.pruneHistory('nobody', { keepNewest: 1 }, { parts: true })).toMatchObject({ checkpoints: 0 });
      await store.close();
    });

    it('prunes the inbox events consumed before the oldest kept checkpoint, and no other; a keyed one keeps answering its seq', async () => {
      const store = await open();
      await store.createAgent(newAgent('inbox'));
      const event = (n: number, ms: number, key: string | null): Write => ({ kind: 'event', agentId: 'inbox', event: { type: 'e', n }, idempotencyKey: key, at: at(ms) });
      await store.commit([event(1, 0, null), event(2, 0, 'k2'), event(3, 5, 'k3'), event(4, 6, null)]);
      await store.commit([1, 2, 3, 4, 5, 6].map((seq) => checkpoint('inbox', seq, { inboxPosition: Math.min(seq, 3) })));
      const result = await store.pruneHistory('inbox', { keepNewest: 2 }, { parts: true });
      // Event 1 is deleted, event 2 cut to its type; event 3 came after the oldest kept checkpoint was written, event 4 is not consumed yet.
      expect(result).toMatchObject({ checkpoints: 4, prunedBefore: 5, events: 2 });
      expect((await store.eventsAfter('inbox', 0)).map((e) => [e.seq, e.event])).toEqual([
        [2, { type: 'e' }],
        [3, { type: 'e', n: 3 }],
        [4, { type: 'e', n: 4 }],
      ]);
      expect(await appendEvent(store, 'inbox', { type: 'e', n: 2 }, 'k2')).toEqual({ seq: 2, duplicate: true });
      expect((await store.pruneHistory('inbox', { keepNewest: 2 }, { parts: true })).events).toBe(0);
      await store.close();
    });

    it('deletes agents that ended before a time, with everything of theirs, and nothing else', async () => {
      const store = await open();
      for (const id of ['old-done', 'old-stopped', 'active', 'new-done']) {
        await store.createAgent(newAgent(id));
        await store.commit([checkpoint(id, 1)]);
      }
      await store.commit([
        { kind: 'status', agentId: 'old-done', status: 'done', error: null, at: at(1) },
        { kind: 'status', agentId: 'old-stopped', status: 'stopped', error: null, at: at(2) },
        { kind: 'status', agentId: 'new-done', status: 'done', error: null, at: at(900) },
      ]);
      expect((await store.deleteEndedAgents({ endedBefore: at(500), limit: 1 })).length).toBe(1);
      expect(await store.deleteEndedAgents({ endedBefore: at(500), limit: 10 })).toHaveLength(1);
      expect(await store.getAgent('old-done')).toBeUndefined();
      expect(await store.getAgent('old-stopped')).toBeUndefined();
      expect(await store.listCheckpoints('old-done')).toEqual([]);
      expect((await store.getAgent('active'))?.status).toBe('active');
      expect((await store.getAgent('new-done'))?.status).toBe('done');
      await store.close();
    });

    it('creates a forked agent together with its first checkpoint', async () => {
      const store = await open();
      const body = checkpoint('x', 1) as Extract<Write, { kind: 'checkpoint' }>;
      const { agent } = await store.createAgent({ ...newAgent('fork'), snapshot: body });
      expect(agent).toMatchObject({ lastSeq: 1, state: 's1' });
      expect(await store.getCheckpoint('fork', 1)).toMatchObject({ snapshot: body.snapshot });
      await store.close();
    });
  });
}
