/**
 * How metrics, traces and the dashboard read an action-log row (see agent-host.ts `actionFor`). One
 * reading, so a dashboard's numbers and a trace agree. What the row's actor *is* (an LLM call, an
 * effect…) is not read from its name: the machine definition declares it (`MachineDefinition.actors`).
 */
import type { ActionWrite } from '../store/store.js';

/** `ok`, or the failure kind the chart acts on: only `transient` is retried; anything else parks the agent. */
export type Outcome = 'ok' | 'transient' | 'permanent';

export interface ActionReading {
  outcome: Outcome;
  /** The call's latency, when known (a call that started before a restart has none). */
  ms: number | undefined;
  /** The chart's attempt counter for this call (1 for the first try). */
  attempt: number | undefined;
  /** The failure's code (`llm_http_500`, `webhook_timeout`…), if it failed. */
  errorCode: string | undefined;
  errorMessage: string | undefined;
  /** The HTTP status of a failed call, when it got one. */
  errorStatus: number | undefined;
  input: Record<string, unknown> | undefined;
  output: unknown;
}

export function readAction(action: ActionWrite): ActionReading {
  const result = asRecord(action.result);
  const payload = asRecord(action.payload);
  const error = asRecord(result?.error);
  const outcome: Outcome = result?.ok === true ? 'ok' : error?.kind === 'transient' ? 'transient' : 'permanent';
  return {
    outcome,
    ms: typeof result?.ms === 'number' ? result.ms : undefined,
    attempt: typeof payload?.attempt === 'number' ? payload.attempt : undefined,
    errorCode: typeof error?.code === 'string' ? error.code : undefined,
    errorMessage: typeof error?.message === 'string' ? error.message : undefined,
    errorStatus: typeof error?.status === 'number' ? error.status : undefined,
    input: asRecord(payload?.input),
    output: result?.output,
  };
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
