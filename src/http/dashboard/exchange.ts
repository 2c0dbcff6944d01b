/**
 * What the agent page shows of a tool-calling agent's exchange, read from its view context and its
 * action log. Read loosely: the page serves every machine, and a context without these fields (or
 * from an older version) shows less, never fails.
 *
 * Where the exchange comes from:
 * - the current task: `context.messages` (after the earlier tasks' prefix when memory is `conversation`);
 * - completed tasks: `context.conversation` when memory is `conversation`; otherwise the task's last
 *   LLM call in the action log, whose request holds the whole exchange and whose answer is the response;
 * - each tool result's ok/error: the `tools` actor's rows, by key `<agentId>:<seq>:<callId>`.
 */
import { toolKey } from '../../agents/reference/tools.js';
import type { ActorKind } from '../../durable/definition.js';
import type { ActionRecord } from '../../store/store.js';
import { readAction } from '../../observability/action-outcome.js';
import { pick } from './format.js';
import { mcpToolsOf, type McpToolRef } from './tool-name.js';

export interface ToolCallView {
  id: string;
  name: string;
  /** The model's JSON text, as it sent it. */
  arguments: string;
  /** `<agentId>:<seq>:<callId>`; undefined when the task's seq is not known. */
  key: string | undefined;
  /** An MCP server's tool: shown as `server · tool`. */
  mcp?: McpToolRef | undefined;
}

export type MessageView =
  | { role: 'user' | 'system'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls: ToolCallView[] }
  /** `ok` undefined: no row of the action log says (it shows only the newest rows). */
  | { role: 'tool'; callId: string; name: string | undefined; key: string | undefined; content: string; ok: boolean | undefined; mcp?: McpToolRef | undefined };

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  llmCalls?: number;
}

export interface TaskView {
  seq: number | undefined;
  task: string;
  /** The task in progress, or one completed with its response. */
  current: boolean;
  response: string | undefined;
  turns: number | undefined;
  usage: Usage | undefined;
  /** Undefined when neither the context nor the shown action log holds the exchange any more. */
  messages: MessageView[] | undefined;
}

export interface PendingView {
  callId: string;
  name: string;
  arguments: unknown;
  key: string | undefined;
  mcp?: McpToolRef | undefined;
}

export interface ExchangeView {
  tasks: TaskView[];
  /** Completed tasks left out (only the newest MAX_TASKS_SHOWN are shown). */
  hiddenTasks: number;
  usage: Usage | undefined;
  pending: PendingView[];
}

export const MAX_TASKS_SHOWN = 50;

interface ToolOutcome {
  ok: boolean;
  name: string | undefined;
}

/** Undefined when the context is not one of a tool-calling agent (no messages and no results). */
export function readExchange(
  agentId: string,
  context: unknown,
  actions: readonly ActionRecord[],
  kindOf: (src: string) => ActorKind,
): ExchangeView | undefined {
  const messages = pick(context, 'messages');
  const results = pick(context, 'results');
  if (!Array.isArray(messages) && !Array.isArray(results)) return undefined;
  const outcomes = toolOutcomes(agentId, actions, kindOf);
  const mcp = mcpToolNames(context, actions, kindOf);
  const conversation = pick(context, 'memory') === 'conversation' ? asArray(pick(context, 'conversation')) : undefined;
  const llmCalls = actions.filter((a) => kindOf(a.action) === 'llm');

  const completed = asArray(results).flatMap((r): TaskView[] => {
    const seq = pick(r, 'seq');
    const task = pick(r, 'task');
    const response = pick(r, 'response');
    if (typeof seq !== 'number' || typeof task !== 'string' || typeof response !== 'string') return [];
    return [{ seq, task, current: false, response, turns: numberOr(pick(r, 'turns')), usage: asUsage(pick(r, 'usage')), messages: undefined }];
  });
  const shown = completed.slice(-MAX_TASKS_SHOWN);
  const segments = conversation ? splitByTask(conversation) : undefined;
  const unusedCalls = [...llmCalls];
  for (const task of shown) {
    const raw = segments ? segments[completed.indexOf(task)] : exchangeFromLog(task, unusedCalls);
    if (raw && firstUserText(raw) === task.task) task.messages = toMessageViews(withoutAnswer(raw, task.response), agentId, task.seq, outcomes, mcp);
  }

  const tasks = [...shown];
  const current = pick(context, 'current');
  const currentSeq = numberOr(pick(current, 'seq'));
  const currentTask = pick(current, 'task');
  if (typeof currentTask === 'string') {
    const own = asArray(messages).slice(conversation?.length ?? 0);
    tasks.push({
      seq: currentSeq,
      task: currentTask,
      current: true,
      response: undefined,
      turns: numberOr(pick(context, 'turn')),
      usage: asUsage(pick(context, 'taskUsage')),
      messages: toMessageViews(own, agentId, currentSeq, outcomes, mcp),
    });
  }
  const pending = asArray(pick(context, 'pendingApprovals')).flatMap((p): PendingView[] => {
    const callId = pick(p, 'callId');
    if (typeof callId !== 'string') return [];
    const name = pick(p, 'name');
    const key = currentSeq === undefined ? undefined : toolKey(agentId, currentSeq, callId);
    return [{ callId, name: typeof name === 'string' ? name : '?', arguments: pick(p, 'arguments'), key, mcp: typeof name === 'string' ? mcp.get(name) : undefined }];
  });
  return { tasks, hiddenTasks: completed.length - shown.length, usage: asUsage(pick(context, 'usage')), pending };
}

/**
 * The MCP tools the agent was offered, by the name the model calls: the current task's list
 * (`context.mcpTools`), the lists its LLM calls returned (`output.mcpTools`) and the tool specs of
 * the `tools` rows, each `{ name, mcp: { server, tool } }`.
 */
function mcpToolNames(context: unknown, actions: readonly ActionRecord[], kindOf: (src: string) => ActorKind): Map<string, McpToolRef> {
  const found = new Map<string, McpToolRef>();
  for (const action of actions) {
    const kind = kindOf(action.action);
    if (kind === 'llm') mcpToolsOf(pick(readAction(action).output, 'mcpTools'), found);
    else if (kind === 'tools') mcpToolsOf(pick(readAction(action).input, 'tools'), found);
  }
  return mcpToolsOf(pick(context, 'mcpTools'), found);
}

/** ok/error of every tool call the shown rows of the `tools` actors recorded, by key. */
function toolOutcomes(agentId: string, actions: readonly ActionRecord[], kindOf: (src: string) => ActorKind): Map<string, ToolOutcome> {
  const outcomes = new Map<string, ToolOutcome>();
  for (const action of actions) {
    if (kindOf(action.action) !== 'tools') continue;
    const { outcome, input, output } = readAction(action);
    const seq = pick(input, 'seq');
    if (outcome !== 'ok' || typeof seq !== 'number') continue;
    for (const result of asArray(output)) {
      const callId = pick(result, 'callId');
      const name = pick(result, 'name');
      if (typeof callId === 'string') {
        outcomes.set(toolKey(agentId, seq, callId), { ok: pick(result, 'ok') === true, name: typeof name === 'string' ? name : undefined });
      }
    }
  }
  return outcomes;
}

/**
 * A completed task's exchange from its last LLM call: the first successful call, among those not
 * taken by an earlier task, that answered the task's response without tool calls. Its request has
 * the task and every turn before; the answer closes it. Calls are taken in order so that two tasks
 * with the same text and response each get their own.
 */
function exchangeFromLog(task: TaskView, calls: ActionRecord[]): unknown[] | undefined {
  const index = calls.findIndex((call) => {
    const { outcome, input, output } = readAction(call);
    const request = asArray(pick(input, 'messages'));
    return (
      outcome === 'ok' &&
      pick(output, 'content') === task.response &&
      asArray(pick(output, 'toolCalls')).length === 0 &&
      lastUserText(request) === task.task
    );
  });
  if (index < 0) return undefined;
  const { input, output } = readAction(calls[index]!);
  calls.splice(0, index + 1); // the earlier ones are this task's tool turns, or a skipped task's
  return [...asArray(pick(input, 'messages')).filter((m) => pick(m, 'role') !== 'system'), { role: 'assistant', content: pick(output, 'content') }];
}

/** The exchange before its final answer: the page shows that one as the task's response. */
function withoutAnswer(messages: unknown[], response: string | undefined): unknown[] {
  const last = messages.at(-1);
  const isAnswer = pick(last, 'role') === 'assistant' && pick(last, 'content') === response && asArray(pick(last, 'toolCalls')).length === 0;
  return isAnswer ? messages.slice(0, -1) : messages;
}

/** A conversation's messages, one run per task: each task starts at its user message. */
function splitByTask(conversation: unknown[]): unknown[][] {
  const segments: unknown[][] = [];
  for (const message of conversation) {
    if (pick(message, 'role') === 'user' || segments.length === 0) segments.push([]);
    segments.at(-1)!.push(message);
  }
  return segments;
}

function toMessageViews(raw: readonly unknown[], agentId: string, seq: number | undefined, outcomes: Map<string, ToolOutcome>, mcp: ReadonlyMap<string, McpToolRef>): MessageView[] {
  const keyOf = (callId: string) => (seq === undefined ? undefined : toolKey(agentId, seq, callId));
  const callNames = new Map<string, string>();
  return raw.flatMap((m): MessageView[] => {
    const role = pick(m, 'role');
    const content = pick(m, 'content');
    if (role === 'user' || role === 'system') return [{ role, content: typeof content === 'string' ? content : '' }];
    if (role === 'assistant') {
      const toolCalls = asArray(pick(m, 'toolCalls')).flatMap((c): ToolCallView[] => {
        const [id, name, args] = [pick(c, 'id'), pick(c, 'name'), pick(c, 'arguments')];
        if (typeof id !== 'string' || typeof name !== 'string') return [];
        callNames.set(id, name);
        return [{ id, name, arguments: typeof args === 'string' ? args : '', key: keyOf(id), mcp: mcp.get(name) }];
      });
      return [{ role, content: typeof content === 'string' ? content : null, toolCalls }];
    }
    if (role === 'tool') {
      const callId = String(pick(m, 'toolCallId') ?? '');
      const key = keyOf(callId);
      const outcome = key === undefined ? undefined : outcomes.get(key);
      const name = callNames.get(callId) ?? outcome?.name;
      return [{ role, callId, name, key, content: typeof content === 'string' ? content : '', ok: outcome?.ok, mcp: name === undefined ? undefined : mcp.get(name) }];
    }
    return [];
  });
}

function lastUserText(messages: readonly unknown[]): string | undefined {
  const content = messages.findLast((m) => pick(m, 'role') === 'user');
  const text = pick(content, 'content');
  return typeof text === 'string' ? text : undefined;
}

function firstUserText(messages: readonly unknown[]): string | undefined {
  const text = pick(messages.find((m) => pick(m, 'role') === 'user'), 'content');
  return typeof text === 'string' ? text : undefined;
}

function asUsage(value: unknown): Usage | undefined {
  const [prompt, completion, total] = [pick(value, 'promptTokens'), pick(value, 'completionTokens'), pick(value, 'totalTokens')];
  if (typeof prompt !== 'number' || typeof completion !== 'number' || typeof total !== 'number') return undefined;
  const llmCalls = numberOr(pick(value, 'llmCalls'));
  return { promptTokens: prompt, completionTokens: completion, totalTokens: total, ...(llmCalls === undefined ? {} : { llmCalls }) };
}

const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const numberOr = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);
