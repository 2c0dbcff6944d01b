/**
 * How metrics and traces read the row of an actor a machine declares `tools`: one reading per tool
 * call. Its input is `{ seq, calls: [{ id, name, … }], tools: [{ name, … }], … }`, its output one
 * `{ callId, name, ok }` per call, and each call is an effect recorded under
 * `<agentId>:<seq>:<callId>` (what the `tools` kind promises; the reference agent's `toolKey`).
 *
 * A batch that failed transiently has no output: the calls whose results were recorded before the
 * failure are left out (they are read again, with the rest, from the row of the attempt that
 * completes the batch); every other call failed with the batch's error code. Which calls have a
 * recorded result only the store knows, so that case asks it (`EffectLookup`), after the fact.
 */
import type { History } from '../store/store.js';
import type { ActionReading } from './action-outcome.js';

export type ToolCallOutcome = 'ok' | 'error';
export const TOOL_CALL_OUTCOMES: readonly ToolCallOutcome[] = ['ok', 'error'];

/** Where recorded effects are looked up (a `Store` is one). */
export type EffectLookup = Pick<History, 'findEffect'>;

export interface ToolCallReading {
  callId: string;
  /** The name the model called: not always a tool it was offered. */
  name: string;
  /** Whether `name` is one of the tools the call's input offered (metrics label only those: the model makes names up). */
  offered: boolean;
  /** `<agentId>:<seq>:<callId>`, when the input has its seq. */
  idempotencyKey: string | undefined;
  outcome: ToolCallOutcome;
  /** The batch's error code, for a call of a batch that failed without a result for it. */
  errorCode: string | undefined;
  /** An MCP server's tool (the offered tool spec says `mcp: { server, tool }`): which server, and its own name for the tool. */
  mcp: { server: string; tool: string } | undefined;
}

/**
 * The readings of one `tools` row, whose transition happened at `at` (epoch ms): at once for a
 * completed batch (or with no lookup, when every call of a failed batch counts as failed), else once
 * the store has said which results were recorded by then (a later attempt's are not this one's).
 * Never rejects: a lookup that fails (a store closing) counts every call of the batch as failed.
 */
export function readToolCalls(agentId: string, reading: ActionReading, at: number, effects?: EffectLookup): ToolCallReading[] | Promise<ToolCallReading[]> {
  const input = reading.input ?? {};
  const seq = typeof input.seq === 'number' ? input.seq : undefined;
  const offered = offeredNames(input.tools);
  const mcp = mcpTools(input.tools);
  const call = (callId: string, name: string, outcome: ToolCallOutcome, errorCode?: string): ToolCallReading => ({
    callId,
    name,
    offered: offered?.has(name) ?? true,
    idempotencyKey: seq === undefined ? undefined : toolCallKey(agentId, seq, callId),
    outcome,
    errorCode,
    mcp: mcp.get(name),
  });

  if (reading.outcome === 'ok') {
    return recordsOf(reading.output).flatMap((r) =>
      typeof r.callId === 'string' && typeof r.name === 'string' ? [call(r.callId, r.name, r.ok === true ? 'ok' : 'error')] : [],
    );
  }
  const code = reading.errorCode ?? reading.outcome;
  const failed = recordsOf(input.calls).flatMap((c) => (typeof c.id === 'string' && typeof c.name === 'string' ? [call(c.id, c.name, 'error', code)] : []));
  if (!effects || seq === undefined || failed.length === 0) return failed;
  return Promise.all(failed.map((c) => effects.findEffect(c.idempotencyKey!).then((recorded) => (recorded && Date.parse(recorded.createdAt) <= at ? undefined : c)))).then(
    (left) => left.filter((c): c is ToolCallReading => c !== undefined),
    () => failed,
  );
}

export function toolCallKey(agentId: string, seq: number, callId: string): string {
  return `${agentId}:${seq}:${callId}`;
}

/** Runs `use` on the readings, now or once they are known (tool calls are reported after the fact anyway). */
export function withToolCalls(readings: ToolCallReading[] | Promise<ToolCallReading[]>, use: (readings: ToolCallReading[]) => void): void {
  if (Array.isArray(readings)) use(readings);
  // Past the runtime's catch for observers: a throw here (a span processor's) has no one to tell.
  else readings.then(use).catch(() => undefined);
}

function offeredNames(tools: unknown): Set<string> | undefined {
  if (!Array.isArray(tools)) return undefined; // a machine of its own that does not say: trust the names
  return new Set(recordsOf(tools).flatMap((t) => (typeof t.name === 'string' ? [t.name] : [])));
}

/** The offered tools that are an MCP server's, by the name the model calls. */
function mcpTools(tools: unknown): Map<string, { server: string; tool: string }> {
  const found = new Map<string, { server: string; tool: string }>();
  for (const t of recordsOf(tools)) {
    const mcp = t.mcp as Record<string, unknown> | null | undefined;
    if (typeof t.name === 'string' && typeof mcp?.server === 'string' && typeof mcp.tool === 'string') found.set(t.name, { server: mcp.server, tool: mcp.tool });
  }
  return found;
}

function recordsOf(value: unknown): Record<string, unknown>[] {
  if (!Array.isArray(value)) return [];
  return value.filter((v): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v));
}
