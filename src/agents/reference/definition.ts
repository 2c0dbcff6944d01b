import { fromPromise } from 'xstate';
import { postWebhook } from './webhook.js';
import type { LlmClient } from '../../llm/client.js';
import { AGENT_UPGRADES, createAgentMachine, DEFAULT_AGENT_DEFAULTS } from './machine.js';
import type { AgentDefaults, EffectRequest, EffectResult, LlmRequest } from './types.js';
import { agentEventSchemas, agentInputSchema } from './schemas.js';
import { currentAgent } from '../../durable/current-agent.js';
import type { MachineDefinition } from '../../durable/definition.js';
import { sleepUntil } from '../../durable/sleep-until.js';

export interface AgentDependencies {
  llm: LlmClient;
  defaults?: Partial<AgentDefaults>;
}

/** The reference `agent` statechart bound to real I/O: the only place the chart meets the world. */
export function agentDefinition({ llm, defaults }: AgentDependencies): MachineDefinition {
  const machine = createAgentMachine({ ...DEFAULT_AGENT_DEFAULTS, ...defaults }).provide({
    actors: {
      callLlm: fromPromise<string, LlmRequest>(({ input, signal }) => llm.complete(input, signal)),
      runSideEffect: fromPromise<EffectResult, EffectRequest>(({ input, signal, system }) => runSideEffect(input, signal, system)),
      sleepUntil: fromPromise<void, { at: number }>(({ input, signal }) => sleepUntil(input.at, signal)),
    },
  });
  return { name: 'agent', machine, upgrades: AGENT_UPGRADES, input: agentInputSchema, events: agentEventSchemas, actors: AGENT_ACTORS };
}

/** What the chart's actors are, for metrics, traces and the dashboard. */
export const AGENT_ACTORS: NonNullable<MachineDefinition['actors']> = {
  callLlm: { kind: 'llm' },
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

/** The idempotency key of an agent's effect: one per task seq, the same at every re-run. */
export function effectKey(agentId: string, seq: number): string {
  return `${agentId}:${seq}`;
}

/**
 * Runs a task's effect once per idempotency key: an effect already recorded is not run again; a
 * re-run after a crash (recorded or not) sends the same key and the same body.
 */
async function runSideEffect(input: EffectRequest, signal: AbortSignal, system: unknown): Promise<EffectResult> {
  const agent = currentAgent(system);
  const idempotencyKey = effectKey(agent.agentId, input.seq);
  const recorded = await agent.findEffect(idempotencyKey);
  if (recorded) return recorded.result as EffectResult;
  let result: EffectResult = { delivered: false, idempotencyKey };
  if (input.webhook) {
    const body = { agentId: agent.agentId, seq: input.seq, task: input.task, response: input.response };
    const status = await postWebhook({ url: input.webhook, idempotencyKey, body, timeoutMs: input.timeoutMs }, signal);
    result = { delivered: true, status, idempotencyKey };
  }
  agent.recordEffect(idempotencyKey, input.seq, result);
  return result;
}
