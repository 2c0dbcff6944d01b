import { Counter, Histogram, type Registry } from 'prom-client';
import { OWNERSHIP_CHANGES, type RuntimeObserver } from '../runtime/observer.js';
import { topLevelState } from '../core/state-value.js';
import { readAction, type ActionReading, type Outcome } from './action-outcome.js';
import { readLlmCall } from './llm-call.js';
import { readToolCalls, TOOL_CALL_OUTCOMES, withToolCalls, type EffectLookup } from './tool-calls.js';

const OUTCOMES: readonly Outcome[] = ['ok', 'transient', 'permanent'];
const FAILURE_REASONS = ['actor', 'commit', 'corrupt'] as const;
/** The `model` label of an LLM call whose input names none; the `tool` label of a call to a tool the model was not offered. */
const UNKNOWN = '(unknown)';
/** LLM calls and webhooks take from milliseconds to minutes. */
const CALL_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** A group commit takes well under a millisecond to tens of milliseconds (fsync). */
const COMMIT_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

export interface RuntimeMetricsOptions {
  /** Where a transiently failed tool batch's recorded results are looked up (see tool-calls.ts); without it, every call of the batch counts as failed. */
  effects?: EffectLookup;
}

/**
 * The metrics the runtime reports through its observer, registered on `registry`. Each callback
 * only increments: the observer is called synchronously after each commit, on the agents' path.
 */
export function createRuntimeMetrics(registry: Registry, { effects }: RuntimeMetricsOptions = {}): RuntimeObserver {
  const registers = [registry];
  const transitions = new Counter({
    name: 'durable_agents_transitions_total',
    help: 'Committed transitions, by machine, event type and the top-level state they led to',
    labelNames: ['machine', 'event', 'state'] as const,
    registers,
  });
  const checkpointLatency = new Histogram({
    name: 'durable_agents_checkpoint_latency_seconds',
    help: 'From a transition to its checkpoint being committed (queueing for the group commit included)',
    buckets: COMMIT_BUCKETS,
    registers,
  });
  const commitSeconds = new Histogram({
    name: 'durable_agents_checkpoint_commit_seconds',
    help: 'Duration of one group commit (one transaction holding checkpoints and the inbox, effect and status writes queued with them)',
    buckets: COMMIT_BUCKETS,
    registers,
  });
  const commitBatchSize = new Histogram({
    name: 'durable_agents_checkpoint_commit_batch_size',
    help: 'Writes per group commit',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    registers,
  });
  const llmCalls = new Counter({
    name: 'durable_agents_llm_calls_total',
    help: 'LLM calls (actors a machine declares `llm`) that ended, by outcome: ok, transient (retried while attempts remain) or permanent',
    labelNames: ['outcome'] as const,
    registers,
  });
  const llmSeconds = new Histogram({
    name: 'durable_agents_llm_call_duration_seconds',
    help: 'LLM call latency by outcome (calls that started before a restart have none)',
    labelNames: ['outcome'] as const,
    buckets: CALL_BUCKETS,
    registers,
  });
  const llmTokens = new Counter({
    name: 'durable_agents_llm_tokens_total',
    help: "Tokens of LLM calls (actors a machine declares `llm`), from each answer's usage, by machine, model and kind: input (the prompt) or output (the answer)",
    labelNames: ['machine', 'model', 'kind'] as const,
    registers,
  });
  const toolCalls = new Counter({
    name: 'durable_agents_tool_calls_total',
    help: 'Tool calls run by actors a machine declares `tools`, by machine, tool (one the model was not offered reads "(unknown)") and outcome: ok or error',
    labelNames: ['machine', 'tool', 'outcome'] as const,
    registers,
  });
  // The servers are the service's configured ones and the tools those they list: bounded by the configuration, not by the model.
  const mcpToolCalls = new Counter({
    name: 'durable_agents_mcp_tool_calls_total',
    help: "Tool calls of MCP servers' tools (also counted in durable_agents_tool_calls_total), by machine, server, the server's name for the tool, and outcome: ok or error",
    labelNames: ['machine', 'server', 'tool', 'outcome'] as const,
    registers,
  });
  const effectCalls = new Counter({
    name: 'durable_agents_effects_total',
    help: 'Side effects (actors a machine declares `effect`) that ended, by outcome: ok, transient or permanent',
    labelNames: ['outcome'] as const,
    registers,
  });
  const effectSeconds = new Histogram({
    name: 'durable_agents_effect_duration_seconds',
    help: 'Side effect latency by outcome',
    labelNames: ['outcome'] as const,
    buckets: CALL_BUCKETS,
    registers,
  });
  const retries = new Counter({
    name: 'durable_agents_retries_total',
    help: 'Calls that failed transiently, which the chart retries after a backoff while attempts remain, by action',
    labelNames: ['action'] as const,
    registers,
  });
  const actionRows = new Counter({
    name: 'durable_agents_action_log_rows_total',
    help: 'Rows written to the action log (one per logged invoked call that ended), by machine and action',
    labelNames: ['machine', 'action'] as const,
    registers,
  });
  const failures = new Counter({
    name: 'durable_agents_agent_failures_total',
    help: 'Agents put in status error or reloaded, by reason: actor (threw inside its chart), commit (checkpoint not committed), corrupt (stored state unusable)',
    labelNames: ['reason'] as const,
    registers,
  });

  const budgetExceeded = new Counter({
    name: 'durable_agents_budget_exceeded_total',
    help: "Agents parked in failed by their budget (lastError.code budget_exceeded: the reference agent's input.budget), by machine",
    labelNames: ['machine'] as const,
    registers,
  });

  const ownership = new Counter({
    name: 'durable_agents_ownership_changes_total',
    help: 'Shared (Postgres) store: agents this process adopted (no live process ran them) or let go (fenced: run elsewhere now; lease-lost)',
    labelNames: ['change'] as const,
    registers,
  });

  const held = new Counter({
    name: 'durable_agents_held_writes_total',
    help: "Agents' writes held after a commit the store could not take (disk full, file read-only or gone, database out of reach); each failed retry counts them again",
    registers,
  });
  const heldRetries = new Counter({
    name: 'durable_agents_held_write_retries_total',
    help: 'Retries of held writes, by outcome: committed (the store takes writes again) or unavailable (backing off further)',
    labelNames: ['outcome'] as const,
    registers,
  });
  for (const outcome of ['committed', 'unavailable'] as const) heldRetries.inc({ outcome }, 0);

  const pruned = new Counter({
    name: 'durable_agents_pruned_rows_total',
    help: 'Rows the retention policy deleted: checkpoints, action-log rows, consumed inbox events, snapshot parts, and ended agents',
    labelNames: ['what'] as const,
    registers,
  });
  const PRUNED = ['checkpoints', 'actions', 'events', 'parts', 'agents'] as const;
  for (const what of PRUNED) pruned.inc({ what }, 0);

  // Known label values start at 0, so a rate() or an alert sees the series before the first event.
  for (const outcome of OUTCOMES) {
    llmCalls.inc({ outcome }, 0);
    effectCalls.inc({ outcome }, 0);
    llmSeconds.zero({ outcome });
    effectSeconds.zero({ outcome });
  }
  for (const reason of FAILURE_REASONS) failures.inc({ reason }, 0);
  for (const change of OWNERSHIP_CHANGES) ownership.inc({ change }, 0);

  function countTokens(machine: string, reading: ActionReading): void {
    const { model = UNKNOWN, usage } = readLlmCall(reading);
    // Both kinds, even at 0 (a failed call, a provider that sends no usage): the model's series exist from its first call.
    llmTokens.inc({ machine, model, kind: 'input' }, usage?.inputTokens ?? 0);
    llmTokens.inc({ machine, model, kind: 'output' }, usage?.outputTokens ?? 0);
  }

  function countToolCalls(agentId: string, machine: string, reading: ActionReading, at: number): void {
    withToolCalls(readToolCalls(agentId, reading, at, effects), (calls) => {
      for (const call of calls) {
        const tool = call.offered ? call.name : UNKNOWN;
        // A tool's other outcome starts at 0 with its first call, so an error rate reads 0 rather than nothing.
        for (const outcome of TOOL_CALL_OUTCOMES) toolCalls.inc({ machine, tool, outcome }, outcome === call.outcome ? 1 : 0);
        if (call.offered && call.mcp) {
          const { server, tool: mcpTool } = call.mcp;
          for (const outcome of TOOL_CALL_OUTCOMES) mcpToolCalls.inc({ machine, server, tool: mcpTool, outcome }, outcome === call.outcome ? 1 : 0);
        }
      }
    });
  }

  return {
    machinesRegistered(machines) {
      for (const { name, actors } of machines) {
        // Machines with LLM calls may have a budget (the reference agent's input.budget).
        if ([...actors.values()].some((a) => a.kind === 'llm')) budgetExceeded.inc({ machine: name }, 0);
        for (const [src, { kind }] of actors) if (kind === 'llm' || kind === 'effect' || kind === 'tools') retries.inc({ action: src }, 0);
      }
    },
    transitionCommitted(event) {
      transitions.inc({ machine: event.machine, event: event.eventType, state: topLevelState(event.state) });
      checkpointLatency.observe(Math.max(0, Date.now() - event.at) / 1000);
      const { action } = event;
      if (!action) return;
      actionRows.inc({ machine: event.machine, action: action.action });
      const reading = readAction(action);
      if (reading.outcome === 'transient') retries.inc({ action: action.action });
      const kind = event.actor?.kind;
      const [count, latency] = kind === 'llm' ? [llmCalls, llmSeconds] : kind === 'effect' ? [effectCalls, effectSeconds] : [];
      count?.inc({ outcome: reading.outcome });
      if (reading.ms !== undefined) latency?.observe({ outcome: reading.outcome }, reading.ms / 1000);
      if (kind === 'llm') countTokens(event.machine, reading);
      if (kind === 'tools') countToolCalls(event.agentId, event.machine, reading, event.at);
    },
    batchCommitted({ size, ms }) {
      commitSeconds.observe(ms / 1000);
      commitBatchSize.observe(size);
    },
    agentFailed({ reason }) {
      failures.inc({ reason });
    },
    agentParked({ machine, lastError }) {
      if ((lastError as { code?: unknown } | null | undefined)?.code === 'budget_exceeded') budgetExceeded.inc({ machine });
    },
    ownershipChanged({ change, agents }) {
      ownership.inc({ change }, agents);
    },
    writesHeld({ writes }) {
      held.inc(writes);
    },
    heldWritesRetried({ outcome }) {
      heldRetries.inc({ outcome });
    },
    pruned(totals) {
      for (const what of PRUNED) if (totals[what] > 0) pruned.inc({ what }, totals[what]);
    },
  };
}
