/**
 * The crash tests' verdict: the contract's guarantees, checked once every process is gone against
 * what the store committed and what the fake model, the webhook sink and the tool server recorded.
 */
import { expect } from 'vitest';
import { SEED, type CommandPlan, type CrashDb, type CrashServices } from './crash-harness.js';
import { expectToolGuarantees, toolsFor, turnKey, turnOf, type CommittedTurn } from './crash-tools.js';

/** Each LLM turn (`turnKey`: task and turn) → the moment after which its answer was known to be committed (read at each kill). */
export class CommittedTurns {
  readonly at = new Map<string, number>();

  async read(db: CrashDb): Promise<void> {
    const turns = await db.committedTurns();
    // Stamped once the read is done: every answer it saw was committed by then.
    const now = Date.now();
    for (const turn of turns) {
      const key = turnKey(turnOf(turn.messages));
      if (!this.at.has(key)) this.at.set(key, now);
    }
  }

  get size(): number {
    return this.at.size;
  }

  /** Tasks with at least one turn committed. */
  get tasks(): number {
    return new Set([...this.at.keys()].map((key) => key.slice(0, key.lastIndexOf('#')))).size;
  }
}

export interface CrashFigures {
  /** Webhook deliveries, and those that repeated a key already delivered (same body). */
  deliveries: number;
  repeated: number;
  /** LLM turns the plan's tasks take (a task whose first answer calls tools takes two). */
  turns: number;
  /** Tool calls in committed answers, tool deliveries, keys delivered more than once, 503s answered. */
  toolCalls: number;
  toolDeliveries: number;
  toolKeysRepeated: number;
  toolUnavailable: number;
}

/**
 * The contract's guarantees, once every process is gone, over everything every process did: work
 * acknowledged is done, effects carry committed answers only, no LLM turn is asked for again once
 * its answer is committed, effects are keyed, each agent's committed checkpoints are one history
 * (seqs 1..N with no gap, progress never going back), each task's committed answers are its turns
 * (each once), and the tool guarantees of `expectToolGuarantees`.
 */
export async function expectGuarantees(options: {
  plan: CommandPlan;
  acked: ReadonlySet<number>;
  services: CrashServices;
  db: CrashDb;
  committed: CommittedTurns;
}): Promise<CrashFigures> {
  const { plan, acked, services, db, committed } = options;
  const { fake, sink, tools } = services;
  const expectedTasks = plan.expectedTasks();
  const totalTasks = plan.totalTasks;

  // 1. Acknowledged work is never lost: every command acknowledged, every task's effect delivered.
  expect(acked.size).toBe(plan.commands.length);
  expect(await db.progress()).toBe(totalTasks);
  const delivered = sink.deliveries.filter((d) => d.status >= 200 && d.status < 300);
  const bodies = delivered.map((d) => d.body as { task: string; seq: number; response: string });
  const deliveredTasks = new Set(bodies.map((b) => b.task));
  for (const tasks of expectedTasks.values()) for (const task of tasks) expect(deliveredTasks).toContain(task);

  // 2. Persist before act, per turn: every effect carried an answer that was already committed,
  // and no LLM turn was asked again after its answer was seen committed.
  await services.deliveryChecks();
  expect(services.uncommittedDeliveries).toEqual([]);
  const lateCalls = fake.calls.filter((call) => {
    const at = committed.at.get(turnKey(turnOf(call.rawMessages)));
    return at !== undefined && call.at > at;
  });
  expect(lateCalls.map((c) => turnKey(turnOf(c.rawMessages)))).toEqual([]);
  // Not vacuous: the turns read from the store are the ones the model was asked (their keys
  // match), each asked before it was seen committed.
  const neverAsked = [...committed.at].filter(([key, at]) => !fake.calls.some((c) => c.at <= at && turnKey(turnOf(c.rawMessages)) === key));
  expect(neverAsked.map(([key]) => key)).toEqual([]);

  // 3. Effects are keyed: one body per key, keys = agentId:1..n, distinct keys = tasks processed.
  const byKey = new Map<string, Set<string>>();
  for (const d of sink.deliveries) {
    const bodies = byKey.get(d.idempotencyKey!) ?? new Set();
    bodies.add(d.rawBody);
    byKey.set(d.idempotencyKey!, bodies);
  }
  for (const [key, bodies] of byKey) expect({ key, bodies: bodies.size }).toEqual({ key, bodies: 1 });
  const deliveredKeys = new Set(delivered.map((d) => d.idempotencyKey));
  expect(deliveredKeys.size).toBe(totalTasks);
  for (const [agent, tasks] of expectedTasks) {
    for (let seq = 1; seq <= tasks.length; seq++) expect(deliveredKeys).toContain(`${agent}:${seq}`);
  }

  // 4. One history per agent: checkpoints 1..N without a gap or a step back in progress, N its
  // last seq. (A second checkpoint at one seq cannot be stored: (agent_id, seq) is the table's
  // primary key.)
  const histories = await db.histories();
  expect([...histories.keys()].sort()).toEqual([...expectedTasks.keys()].sort());
  for (const [agentId, { lastSeq, checkpoints }] of histories) {
    expect({ agentId, seqs: checkpoints.map((c) => c.seq) }).toEqual({ agentId, seqs: Array.from({ length: lastSeq }, (_, i) => i + 1) });
    const backwards = checkpoints.filter((c, i) => i > 0 && c.progress < checkpoints[i - 1]!.progress);
    expect({ agentId, backwards }).toEqual({ agentId, backwards: [] });
  }

  // 5. Each task's committed answers are its turns, each committed once, by its agent: the tool
  // calls the model asked for, then the text its webhook delivered.
  const turns = await db.committedTurns();
  const responses = new Map(bodies.map((b) => [b.task, b.response]));
  const describe = (turn: CommittedTurn) => {
    const { task, turn: n } = turnOf(turn.messages);
    const { content, toolCalls } = turn.answer;
    const what = toolCalls.length > 0 ? `calls ${toolCalls.map((c) => c.name).join('+')}` : content === responses.get(task) ? 'the response delivered' : `text ${content}`;
    return `${task} turn ${n} by ${turn.agentId}: ${what}`;
  };
  const expected = [...expectedTasks].flatMap(([agentId, tasks]) =>
    tasks.flatMap((task) => {
      const calls = toolsFor(SEED, task);
      const final = `${task} turn ${calls.length > 0 ? 1 : 0} by ${agentId}: the response delivered`;
      return calls.length > 0 ? [`${task} turn 0 by ${agentId}: calls ${calls.join('+')}`, final] : [final];
    }),
  );
  expect(turns.map(describe).sort()).toEqual(expected.sort());

  // 6. Tools: calls from committed answers only, keyed, each result recorded once and sent on.
  const taskSeqs = new Map(bodies.map((b) => [b.task, b.seq]));
  const toolFigures = await expectToolGuarantees({ tools, db, turns, taskSeqs, llmCalls: fake.calls });

  return {
    deliveries: sink.deliveries.length,
    repeated: sink.deliveries.length - deliveredKeys.size,
    turns: expected.length,
    toolCalls: toolFigures.calls,
    toolDeliveries: toolFigures.deliveries,
    toolKeysRepeated: toolFigures.repeatedKeys,
    toolUnavailable: tools.unavailable,
  };
}

/** The figures of a run, for its log line. */
export function figuresLine(f: CrashFigures): string {
  return (
    `${f.turns} LLM turns; ${f.deliveries} webhook deliveries, ${f.repeated} repeated (same key, same body); ` +
    `${f.toolCalls} tool calls committed, ${f.toolDeliveries} tool deliveries (${f.toolUnavailable} answered 503, ${f.toolKeysRepeated} keys delivered more than once)`
  );
}
