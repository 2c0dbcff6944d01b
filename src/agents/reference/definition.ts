import { fromPromise } from 'xstate';
import { postJson } from '../../core/outbound-fetch.js';
import { parseOutboundPolicy, type OutboundPolicy } from '../../core/outbound.js';
import { childEventKey, type ChildResponseEvent } from '../../durable/child-events.js';
import { currentAgent } from '../../durable/current-agent.js';
import type { MachineDefinition } from '../../durable/definition.js';
import { sleepUntil } from '../../durable/sleep-until.js';
import type { ChatMessage, LlmAnswer, LlmClient, LlmRequest } from '../../llm/client.js';
import { AGENT_UPGRADES, createAgentMachine, DEFAULT_AGENT_DEFAULTS } from './machine.js';
import { agentEventSchemas, agentInputSchema } from './schemas.js';
import { AGENT_MACHINE_NAME } from './steps.js';
import { priceOf, refuseBudgetRaise } from './budget.js';
import { runToolCalls, toToolSpec, type CodeTool, type HttpPost } from './tools.js';
import type { AgentDefaults, EffectRequest, EffectResult, LlmStepInput, LlmStepOutput, ToolResult, ToolsRequest } from './types.js';
import type { McpServers } from '../../mcp/types.js';
import { checkMcpServers, withMcpTools } from './mcp-tools.js';
import { postWebhook } from './webhook.js';

export interface AgentDependencies {
  llm: LlmClient;
  defaults?: Partial<AgentDefaults>;
  /** Tools registered in code: offered to every agent besides the HTTP tools of its input. */
  tools?: readonly CodeTool[];
  /** Where webhooks and HTTP tools may go (default: anywhere but link-local and cloud-metadata addresses). */
  outbound?: OutboundPolicy;
  /** Prices by model (US dollars per million tokens), for budgets in dollars; the same as `defaults.prices`, which they extend. */
  prices?: AgentDefaults['prices'];
  /**
   * MCP servers (`createMcpServers(...)`) whose tools an agent's input may ask for (`"mcp": ["NAME"]`).
   * Not closed by the runtime: whoever created them closes them, after `runtime.close()`.
   */
  mcp?: McpServers;
}

/** The reference `agent` statechart bound to real I/O: the only place the chart meets the world. */
export function agentDefinition({ llm, defaults, tools = [], outbound = parseOutboundPolicy(undefined), prices, mcp }: AgentDependencies): MachineDefinition {
  const codeTools = new Map(tools.map((t) => [t.name, t]));
  if (codeTools.size !== tools.length) throw new Error('Two tools registered in code have the same name.');
  const post: HttpPost = (url, request) => postJson(url, { step: 'tool', ...request, policy: outbound });
  const settings: AgentDefaults = { ...DEFAULT_AGENT_DEFAULTS, ...defaults, ...(prices ? { prices: { ...defaults?.prices, ...prices } } : {}) };
  const machine = createAgentMachine(settings, tools.map(toToolSpec)).provide({
    actors: {
      callLlm: fromPromise<LlmStepOutput, LlmStepInput>(({ input, signal, system }) =>
        withMcpTools(mcp, input, signal, (request) => callLlm(llm, request, signal, system)),
      ),
      runTools: fromPromise<ToolResult[], ToolsRequest>(({ input, signal, system }) =>
        runToolCalls(input, { agent: currentAgent(system), codeTools, post, signal, mcp }),
      ),
      runSideEffect: fromPromise<EffectResult, EffectRequest>(({ input, signal, system }) => runSideEffect(input, signal, system, outbound)),
      sleepUntil: fromPromise<void, { at: number }>(({ input, signal }) => sleepUntil(input.at, signal)),
    },
  });
  return {
    name: AGENT_MACHINE_NAME,
    machine,
    upgrades: AGENT_UPGRADES,
    input: inputSchemaFor(codeTools, outbound, settings).superRefine(checkMcpServers(mcp)),
    events: agentEventSchemas,
    actors: AGENT_ACTORS,
    refuse: { 'tool.approve': refuseDecision, 'tool.reject': refuseDecision, 'budget.raise': refuseBudgetRaise },
    // Queued tasks are accepted work not done yet: they count against the inbox cap (maxInbox).
    backlog: queuedTasks,
  };
}

/** What the chart's actors are, for metrics, traces and the dashboard. */
export const AGENT_ACTORS: NonNullable<MachineDefinition['actors']> = {
  callLlm: { kind: 'llm' },
  runTools: { kind: 'tools' },
  runSideEffect: {
    kind: 'effect',
    // A failed effect has no output to read the key from; the key is the agent's rule.
    idempotencyKey: ({ agentId, input }) => {
      const seq = (input as Partial<EffectRequest> | null)?.seq;
      return typeof seq === 'number' ? effectKey(agentId, seq) : undefined;
    },
  },
  sleepUntil: { kind: 'wait' },
};

/** An agent's tasks waiting behind the current one (the current one is being worked on: not counted). */
export function queuedTasks(context: unknown): number {
  const queue = (context as { queue?: unknown } | null)?.queue;
  return Array.isArray(queue) ? queue.length : 0;
}

/** The idempotency key of an agent's effect: one per task seq, the same at every re-run. */
export function effectKey(agentId: string, seq: number): string {
  return `${agentId}:${seq}`;
}


/** Spawn input: the contract's schema, plus no HTTP tool shadowing a code tool, and URLs the outbound policy allows. */
function inputSchemaFor(codeTools: ReadonlyMap<string, CodeTool>, outbound: OutboundPolicy, settings: AgentDefaults) {
  return agentInputSchema.superRefine((input, ctx) => {
    // A limit in dollars with no price to count them by would never be reached: refused, not ignored.
    const model = input.model ?? settings.model;
    if (input.budget?.maxCostUsd !== undefined && !priceOf(settings, model)) {
      const known = Object.keys(settings.prices ?? {});
      ctx.addIssue({
        code: 'custom',
        path: ['budget', 'maxCostUsd'],
        message: `no price is known for the model "${model}", so its cost cannot be counted (prices ${known.length ? `are known for: ${known.join(', ')}` : "are set with serve --llm-prices, a config's prices or agentDefinition({ prices })"}); give maxTotalTokens instead`,
      });
    }
    for (const [i, t] of (input.tools ?? []).entries()) {
      if (codeTools.has(t.name)) ctx.addIssue({ code: 'custom', path: ['tools', i, 'name'], message: `"${t.name}" is the name of a tool registered on the server` });
    }
    // Throws OutboundNotAllowedError (a 400 of its own), not a zod issue: the caller must see why.
    // A URL the schema refuses is reported by the schema, as invalid input.
    for (const url of [input.webhook, ...(input.tools ?? []).map((t) => ('url' in t ? t.url : undefined))]) if (url !== undefined && /^https?:\/\//i.test(url) && URL.canParse(url)) outbound.checkUrl(url);
  });
}

/** `tool.approve`/`tool.reject` for a call that is not waiting for a decision is a conflict (409). */
function refuseDecision(event: { type: string; callId?: unknown }, current: { context: unknown }): string | undefined {
  const pending = (current.context as { pendingApprovals?: { callId: string }[] } | null)?.pendingApprovals ?? [];
  if (pending.some((p) => p.callId === event.callId)) return undefined;
  return `No tool call "${String(event.callId)}" is waiting for a decision${pending.length ? ` (waiting: ${pending.map((p) => p.callId).join(', ')})` : ''}.`;
}

/** One LLM call, its text streamed to the agent's stream as it comes (when the input says which call it is). */
async function callLlm(llm: LlmClient, input: LlmStepInput, signal: AbortSignal, system: unknown): Promise<LlmAnswer> {
  const request = readLlmRequest(input);
  if (input.seq === undefined || input.turn === undefined) return llm.complete(request, signal);
  const tokens = currentAgent(system).streamTokens({ seq: input.seq, turn: input.turn });
  try {
    return await llm.complete(request, signal, (delta) => tokens.write(delta));
  } finally {
    tokens.end();
  }
}

/**
 * The request of an LLM call, also from a version 2 checkpoint whose call was in flight: its stored
 * input was `{model, system, task, timeoutMs}`.
 */
function readLlmRequest(input: LlmRequest | { model: string; system: string | null; task: string; timeoutMs: number }): LlmRequest {
  if ('messages' in input) {
    const { seq: _seq, turn: _turn, ...request } = input as LlmStepInput;
    return request;
  }
  const messages: ChatMessage[] = [...(input.system ? [{ role: 'system' as const, content: input.system }] : []), { role: 'user', content: input.task }];
  return { model: input.model, messages, timeoutMs: input.timeoutMs };
}

/**
 * Runs a task's effect once per idempotency key: an effect already recorded is not run again; a
 * re-run after a crash (recorded or not) sends the same key and the same body.
 */
async function runSideEffect(input: EffectRequest, signal: AbortSignal, system: unknown, outbound: OutboundPolicy): Promise<EffectResult> {
  const agent = currentAgent(system);
  const idempotencyKey = effectKey(agent.agentId, input.seq);
  const recorded = await agent.findEffect(idempotencyKey);
  if (recorded) return recorded.result as EffectResult;
  let result: EffectResult = { delivered: false, idempotencyKey };
  if (input.webhook) {
    const body = { agentId: agent.agentId, seq: input.seq, task: input.task, response: input.response };
    const status = await postWebhook({ url: input.webhook, idempotencyKey, body, timeoutMs: input.timeoutMs }, signal, outbound);
    result = { delivered: true, status, idempotencyKey };
  }
  // A child agent answers its parent too (an agent-as-tool call's result), once per task. Awaited:
  // the answer is in the parent's inbox before this effect's result can be checkpointed, so it comes
  // before the `agent.done` of a child that finishes with that checkpoint (`finishAfterTasks`).
  if (agent.parent !== undefined) {
    const report: ChildResponseEvent = { type: 'agent.response', agentId: agent.agentId, seq: input.seq, task: input.task, response: input.response };
    await agent.reportToParent(report, childEventKey.response(agent.agentId, input.seq));
  }
  agent.recordEffect(idempotencyKey, input.seq, result);
  return result;
}

