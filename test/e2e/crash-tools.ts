/**
 * The tools of the crash tests' agents: HTTP tools on a tool server that lives in the parent (its
 * records survive every kill; seeded latency, and some 503s so that calls are retried), the fake
 * model's seeded choice of tool calls, and the checks of the contract's tool guarantees against what
 * the store committed: every tool call sent was in a committed answer, one name and arguments per
 * key, and every call of a committed answer has its result recorded once, the result the model was
 * then sent.
 */
import { expect } from 'vitest';
import type { HttpToolInput, ToolResult } from '../../src/agents/reference/types.js';
import { toolKey } from '../../src/agents/reference/tools.js';
import { nextRandom, seedFrom } from '../../src/core/random.js';
import type { ChatMessage, ToolCall } from '../../src/llm/client.js';
import { textOf, type WireMessage } from '../support/fake-openai-wire.js';
import type { RecordedCall, ReplyPolicy } from '../support/fake-openai.js';
import { startToolServer, type ToolHandler, type ToolServer } from '../support/tool-server.js';

export const TOOL_NAMES = ['lookup', 'weather', 'convert'] as const;

/** What the tools take: the task and the number of the answer that called them. */
const PARAMETERS = {
  type: 'object',
  properties: { task: { type: 'string' }, n: { type: 'integer' } },
  required: ['task', 'n'],
  additionalProperties: false,
};

/** A successful `callLlm` action in a committed checkpoint: the request's messages and its answer. */
export interface CommittedTurn {
  agentId: string;
  messages: ChatMessage[];
  answer: { content: string | null; toolCalls: ToolCall[] };
}

export interface EffectRecord {
  key: string;
  agentId: string;
  seq: number;
  result: unknown;
}

/** What the tool checks read from the store. */
export interface ToolDb {
  /**
   * Whether one of the agent's committed `callLlm` answers holds the tool call `callId`.
   * Synchronous where the store allows (SQLite): it then runs at the very moment the call arrives.
   */
  toolCallCommitted(agentId: string, callId: string): boolean | Promise<boolean>;
  /** Every successful `callLlm` action committed so far. */
  committedTurns(): Promise<CommittedTurn[]>;
  /** Every recorded effect (webhooks and tool calls). */
  effects(): Promise<EffectRecord[]>;
}

/**
 * The tools the model calls for a task's first turn: none, one, or two different ones (called in
 * parallel). Drawn from the seed and the task alone, so a turn asked again after a crash asks for
 * the same tools, and the test knows each task's turns in advance.
 */
export function toolsFor(seed: number, task: string): string[] {
  let state = seedFrom(`${seed}:${task}`);
  const draw = () => {
    const next = nextRandom(state);
    state = next.state;
    return next.value;
  };
  const left: string[] = [...TOOL_NAMES];
  return Array.from({ length: Math.floor(draw() * 3) }, () => left.splice(Math.floor(draw() * left.length), 1)[0]!);
}

/** The task of an exchange (its user message) and its turn (the answers it already holds). */
export function turnOf(messages: readonly { role?: unknown; content?: unknown }[]): { task: string; turn: number } {
  return {
    task: textOf(messages.find((m) => m.role === 'user')?.content),
    turn: messages.filter((m) => m.role === 'assistant').length,
  };
}

export const turnKey = ({ task, turn }: { task: string; turn: number }) => `${task}#${turn}`;

/**
 * The model's answers: a task's first turn calls the tools `toolsFor` draws, with call ids unique
 * per answer (so every answer's keys differ) and arguments from the task and the answer's number;
 * any other turn (the last message is a tool result) falls through to the fake's final text.
 */
export function toolCallingModel(seed: number, nextAnswer: () => number): ReplyPolicy {
  return (call: RecordedCall) => {
    if (call.rawMessages.at(-1)?.role !== 'user') return undefined;
    const names = toolsFor(seed, call.userContent);
    if (names.length === 0) return undefined;
    const n = nextAnswer();
    return { toolCalls: names.map((name, i) => ({ id: `call-${n}-${i}`, name, arguments: { task: call.userContent, n } })) };
  };
}

export interface CrashTools {
  server: ToolServer;
  /** The HTTP tools of every spawn's input. */
  inputs: HttpToolInput[];
  /** Deliveries whose call was in no committed answer when they arrived (or whose key is not their body's). */
  uncommittedCalls: string[];
  /** The bodies each key was answered with (200), one per delivery: every delivery's answer is unique. */
  answered: Map<string, Set<string>>;
  /** 503s the tools answered. */
  readonly unavailable: number;
  /** Waits for the checks of deliveries made so far (asynchronous on Postgres). */
  deliveryChecks(): Promise<void>;
  close(): Promise<void>;
}

/** The tool server (latency and 503s drawn from `faults`), checking each delivery against `db` as it arrives. */
export async function startCrashTools(db: ToolDb, faults: { next(): number; int(lo: number, hi: number): number }): Promise<CrashTools> {
  const uncommittedCalls: string[] = [];
  const answered = new Map<string, Set<string>>();
  const checks: Promise<void>[] = [];
  let unavailable = 0;
  let results = 0;
  const server = await startToolServer({
    onDelivery: ({ idempotencyKey, body }) => {
      const key = idempotencyKey ?? '(no key)';
      if (!body || key !== toolKey(body.agentId, body.seq, body.callId)) return void uncommittedCalls.push(`${key}: not the key of its body`);
      const flag = (committed: boolean) => {
        if (!committed) uncommittedCalls.push(`${key}: ${body.name} ${JSON.stringify(body.arguments)}`);
      };
      const committed = db.toolCallCommitted(body.agentId, body.callId);
      if (typeof committed === 'boolean') flag(committed);
      else checks.push(committed.then(flag, (err: unknown) => void uncommittedCalls.push(`${key}: check failed: ${String(err)}`)));
    },
  });
  // Each answer is different, as a real tool's could be: a call run twice whose second result
  // reached the model would then show in the checks.
  const answer: ToolHandler = (delivery) => {
    if (faults.next() < 0.1) return unavailable++, { kind: 'status', status: 503 };
    const body = { tool: delivery.name, result: `${delivery.name} result #${++results}`, arguments: delivery.body?.arguments ?? null };
    const key = delivery.idempotencyKey ?? '';
    answered.set(key, (answered.get(key) ?? new Set()).add(JSON.stringify(body)));
    return { kind: 'delay', ms: faults.int(0, 50), then: { kind: 'json', body } };
  };
  for (const name of TOOL_NAMES) server.respond(name, answer);
  return {
    server,
    inputs: TOOL_NAMES.map((name) => ({ name, description: `The ${name} tool`, parameters: PARAMETERS, url: server.url(name) })),
    uncommittedCalls,
    answered,
    get unavailable() {
      return unavailable;
    },
    deliveryChecks: async () => void (await Promise.all(checks)),
    close: () => server.close(),
  };
}

/**
 * The tool guarantees, once every process is gone: tool calls went out only from committed answers,
 * with one name and arguments per key; every call of every committed answer has exactly one
 * recorded result under its key, ok, one of the answers the tool gave that key; the next committed
 * turn of its task carried that result, as did every request of that turn the model was sent; and
 * no result is recorded for a call no committed answer holds.
 */
export async function expectToolGuarantees(options: {
  tools: CrashTools;
  db: ToolDb;
  turns: readonly CommittedTurn[];
  /** Each task's seq, from its webhook deliveries. */
  taskSeqs: ReadonlyMap<string, number>;
  llmCalls: readonly RecordedCall[];
}): Promise<{ calls: number; deliveries: number; repeatedKeys: number }> {
  const { tools, db, turns, taskSeqs, llmCalls } = options;
  await tools.deliveryChecks();
  expect(tools.uncommittedCalls).toEqual([]);
  expect(tools.server.conflictingKeys()).toEqual([]);

  const toolEffects = (await db.effects()).filter((e) => e.key.startsWith(`${e.agentId}:${e.seq}:`));
  const effects = new Map(toolEffects.map((e) => [e.key, e]));
  const committedByTurn = new Map(turns.map((t) => [turnKey(turnOf(t.messages)), t]));
  const asked = new Map<string, RecordedCall[]>();
  for (const call of llmCalls) {
    const key = turnKey(turnOf(call.rawMessages));
    asked.set(key, [...(asked.get(key) ?? []), call]);
  }
  const problems: string[] = [];
  const committedKeys = new Set<string>();
  for (const turn of turns) {
    const { task, turn: n } = turnOf(turn.messages);
    const seq = taskSeqs.get(task);
    if (seq === undefined) {
      if (turn.answer.toolCalls.length > 0) problems.push(`${task}: no webhook delivery says its seq`);
      continue;
    }
    const next = turnKey({ task, turn: n + 1 });
    for (const call of turn.answer.toolCalls) {
      const key = toolKey(turn.agentId, seq, call.id);
      committedKeys.add(key);
      const recorded = effects.get(key)?.result as ToolResult | undefined;
      if (!recorded) {
        problems.push(`${key}: no recorded result`);
        continue;
      }
      if (!(recorded.ok && recorded.callId === call.id && recorded.name === call.name)) problems.push(`${key}: recorded ${JSON.stringify(recorded)}`);
      if (!tools.answered.get(key)?.has(recorded.content)) problems.push(`${key}: recorded ${recorded.content}, not an answer the tool gave this key`);
      const carried = (committedByTurn.get(next)?.messages ?? []).find((m) => m.role === 'tool' && m.toolCallId === call.id)?.content;
      if (carried !== recorded.content) problems.push(`${key}: the next committed turn carried ${carried}, recorded ${recorded.content}`);
      for (const request of asked.get(next) ?? []) {
        const sent = toolMessage(request.rawMessages, call.id);
        if (sent !== recorded.content) problems.push(`${key}: a request of the next turn (at ${request.at}) carried ${sent}, recorded ${recorded.content}`);
      }
    }
  }
  expect(problems).toEqual([]);
  expect(toolEffects.filter((e) => !committedKeys.has(e.key)).map((e) => `${e.key}: recorded for no committed call`)).toEqual([]);

  const byKey = tools.server.byKey();
  return {
    calls: committedKeys.size,
    deliveries: tools.server.deliveries.length,
    repeatedKeys: [...byKey.values()].filter((group) => group.length > 1).length,
  };
}

function toolMessage(messages: readonly WireMessage[], callId: string): string | undefined {
  const message = messages.find((m) => m.role === 'tool' && m.tool_call_id === callId);
  return message === undefined ? undefined : textOf(message.content);
}
