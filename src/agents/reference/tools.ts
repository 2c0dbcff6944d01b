/**
 * The reference agent's tools: the ones a library user registers in code (`tool({...})`) and the
 * HTTP tools of a spawn input, and how one committed answer's tool calls are run.
 *
 * Each call is an effect keyed `<agentId>:<seq>:<callId>`: a result that was recorded is never
 * asked for again; a call interrupted by a crash is sent again with the same key, name and
 * arguments (they come from the committed answer). What the model did wrong (an unknown tool,
 * arguments that are not JSON or do not fit the tool's parameters) and what a tool refused (a 4xx,
 * a permanent error) go back to the model as a tool message with an `error`; transient failures
 * (timeouts, network errors, 408, 429, 5xx) fail the step, which the chart retries with backoff.
 */
import { z } from 'zod';
import { isTransientStatus, parseRetryAfter } from '../../core/backoff.js';
import { StepError } from '../../core/errors.js';
import { toolLimits } from '../../core/tool-limits.js';
import type { DurableAgentHandle } from '../../durable/current-agent.js';
import type { ToolCall } from '../../llm/client.js';
import type { McpServers } from '../../mcp/types.js';
import { callMcpTool } from './mcp-tools.js';
import { parseArguments } from './steps.js';
import type { ToolDecision, ToolResult, ToolSpec, ToolsRequest } from './types.js';

/** What a tool's `execute` is told of the call. */
export interface ToolCallContext {
  /** `<agentId>:<seq>:<callId>`: the same at every re-run of this call; pass it on to what the tool calls. */
  idempotencyKey: string;
  /** Aborted when the agent stops or the call times out. */
  signal: AbortSignal;
  agentId: string;
}

/** A tool registered in code (see `tool`). */
export interface CodeTool {
  name: string;
  description?: string;
  parameters: z.ZodType;
  /** Not run until a person approves the call (`tool.approve`). */
  approval?: boolean;
  /** Calls of this tool running at once in this process, at most (for all agents together); more wait in line. Unset: no limit. */
  concurrency?: number;
  execute(args: unknown, call: ToolCallContext): unknown;
}

/** The tool names the contract allows (also for HTTP tools). */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Declares a tool for the model, typed by its zod parameters, e.g.
 * `tool({ name: 'lookup', parameters: z.object({ city: z.string() }), execute: ({ city }, { idempotencyKey }) => … })`.
 * Its result (any JSON value or text) is what the model reads; throw a transient `StepError` to have
 * the call retried, anything else to tell the model it failed.
 */
export function tool<S extends z.ZodType>(definition: {
  name: string;
  description?: string;
  parameters: S;
  approval?: boolean;
  concurrency?: number;
  execute: (args: z.infer<S>, call: ToolCallContext) => unknown;
}): CodeTool {
  if (!TOOL_NAME.test(definition.name)) throw new Error(`A tool's name must match ${TOOL_NAME} (got "${definition.name}").`);
  const { concurrency } = definition;
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1)) {
    throw new Error(`The tool "${definition.name}": concurrency must be a positive integer (got ${concurrency}).`);
  }
  return definition as CodeTool;
}

/** How a code tool is kept in checkpoints: by name, with the JSON Schema the model is shown. */
export function toToolSpec(codeTool: CodeTool): ToolSpec {
  const { $schema: _schema, ...parameters } = z.toJSONSchema(codeTool.parameters) as Record<string, unknown>;
  return { name: codeTool.name, description: codeTool.description ?? null, parameters, approval: codeTool.approval ?? false };
}

/** An HTTP POST as the tools need it (the outbound policy's client in production). */
export type HttpPost = (
  url: string,
  request: { headers: Record<string, string>; body: unknown; timeoutMs: number; signal: AbortSignal },
) => Promise<{ status: number; headers: Headers | Record<string, string | string[] | undefined>; text: string }>;

export interface ToolRunner {
  agent: DurableAgentHandle;
  codeTools: ReadonlyMap<string, CodeTool>;
  post: HttpPost;
  signal: AbortSignal;
  /** The MCP servers the agent's `mcp` tools run on (agentDefinition's `mcp`). */
  mcp?: McpServers;
}

export function toolKey(agentId: string, seq: number, callId: string): string {
  return `${agentId}:${seq}:${callId}`;
}

/**
 * Runs the calls of one answer, in parallel, each once per key. Resolves with every result, in call
 * order, once all are recorded; rejects with the first transient failure once the others have
 * settled (their results recorded), so a retry runs only what is left.
 */
export async function runToolCalls(request: ToolsRequest, runner: ToolRunner): Promise<ToolResult[]> {
  const settled = await Promise.allSettled(request.calls.map((call) => runOnce(call, request, runner)));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<ToolResult>).value);
}

async function runOnce(call: ToolCall, request: ToolsRequest, runner: ToolRunner): Promise<ToolResult> {
  const key = toolKey(runner.agent.agentId, request.seq, call.id);
  const recorded = await runner.agent.findEffect(key);
  if (recorded) return recorded.result as ToolResult;
  const result = await execute(call, key, request, runner);
  runner.agent.recordEffect(key, request.seq, result);
  return result;
}

async function execute(call: ToolCall, key: string, request: ToolsRequest, runner: ToolRunner): Promise<ToolResult> {
  const fail = (error: string, extra: Record<string, unknown> = {}): ToolResult => ({
    callId: call.id, name: call.name, ok: false, content: JSON.stringify({ error, ...extra }),
  });
  const decision: ToolDecision | undefined = request.decisions[call.id];
  if (decision && !decision.approved) {
    return fail(`A person rejected this call${decision.reason ? `: ${decision.reason}` : '.'}`, { rejected: true });
  }
  const spec = request.tools.find((t) => t.name === call.name);
  const codeTool = runner.codeTools.get(call.name);
  if (!spec || (!spec.url && !spec.agent && !spec.mcp && !codeTool)) {
    return fail(`There is no tool named "${call.name}".`);
  }
  const args = parseArguments(call.arguments);
  if (typeof args === 'string' && call.arguments.trim() !== '') {
    return fail(`The arguments are not JSON: ${call.arguments.slice(0, 200)}`);
  }
  const checked = validatorFor(spec.parameters).safeParse(call.arguments.trim() === '' ? {} : args);
  if (!checked.success) return fail(`The arguments do not match the tool's parameters: ${z.prettifyError(checked.error)}`);
  const ok = (content: string): ToolResult => ({ callId: call.id, name: call.name, ok: true, content });
  // A call of an agent tool with a task starts a child agent in the chart; only one the chart could not start comes here.
  if (spec.agent) return fail('An agent tool takes {"task": "<what to ask>"} with a non-empty task.');
  if (spec.mcp) {
    // An MCP server's limit (its config's `concurrency`) is shared by all its tools.
    const pool = `mcp ${spec.mcp.server}`;
    const release = await toolCapacity({ key: pool, name: pool, tool: call.name }, runner.mcp?.concurrency?.(spec.mcp.server), runner);
    try {
      return await callMcpTool(runner.mcp, { ...spec, mcp: spec.mcp }, call, checked.data, { idempotencyKey: key, signal: runner.signal, timeoutMs: request.timeoutMs });
    } finally {
      release();
    }
  }
  if (codeTool) {
    // Outside the try: a wait its agent's stop aborts is no failure of the tool to tell the model.
    const release = await toolCapacity({ key: codeTool, name: `code ${codeTool.name}`, tool: call.name }, codeTool.concurrency, runner);
    let output: unknown;
    try {
      output = await codeTool.execute(codeTool.parameters.parse(checked.data), { idempotencyKey: key, signal: runner.signal, agentId: runner.agent.agentId });
    } catch (err) {
      if (err instanceof StepError && err.kind === 'transient') throw err;
      return fail(`The tool failed: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      release();
    }
    return ok(typeof output === 'string' ? output : JSON.stringify(output ?? null));
  }
  // An HTTP tool's limit belongs to its URL: agents declaring the same URL share it.
  const pool = `http ${spec.url!}`;
  const release = await toolCapacity({ key: pool, name: pool, tool: call.name }, spec.concurrency, runner);
  let response: Awaited<ReturnType<HttpPost>>;
  try {
    response = await postTool(spec.url!, call, key, checked.data, request, runner);
  } finally {
    release();
  }
  if (response.status >= 200 && response.status < 300) return ok(response.text);
  return fail(`The tool answered HTTP ${response.status}.`, { status: response.status, body: response.text.slice(0, 1000) });
}

/**
 * Waits for room under a tool's `concurrency` (none: at once); resolves with what gives the room
 * back. `key` is the pool in this process (a code tool's object: the same registration), `name`
 * the same pool in every process (on a shared store, its slots are the database's).
 */
function toolCapacity(pool: { key: unknown; name: string; tool: string }, limit: number | undefined, runner: ToolRunner): Promise<() => void> {
  if (limit === undefined) return Promise.resolve(noRelease);
  // The runtime's line (store-wide on a shared store); an agent no runtime hosts, this process's.
  if (runner.agent.waitForToolCapacity) return runner.agent.waitForToolCapacity(pool, limit, runner.signal);
  return toolLimits.acquire(pool.key, pool.tool, limit, runner.agent.agentId, runner.signal);
}

const noRelease = (): void => {};

async function postTool(url: string, call: ToolCall, key: string, args: unknown, request: ToolsRequest, runner: ToolRunner) {
  let response: Awaited<ReturnType<HttpPost>>;
  try {
    response = await runner.post(url, {
      headers: { 'idempotency-key': key },
      body: { agentId: runner.agent.agentId, seq: request.seq, callId: call.id, name: call.name, arguments: args },
      timeoutMs: request.timeoutMs,
      signal: runner.signal,
    });
  } catch (err) {
    if (err instanceof StepError) throw err;
    const timedOut = err instanceof Error && err.name === 'TimeoutError';
    throw new StepError('transient', timedOut ? 'tool_timeout' : 'tool_unreachable', `The tool "${call.name}" could not be reached: ${(err as Error).message}`, { cause: err });
  }
  if (isTransientStatus(response.status)) {
    const retryAfterMs = parseRetryAfter(headerOf(response.headers, 'retry-after'));
    throw new StepError('transient', 'tool_unavailable', `The tool "${call.name}" answered HTTP ${response.status}.`, {
      status: response.status,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });
  }
  return response;
}

function headerOf(headers: Awaited<ReturnType<HttpPost>>['headers'], name: string): string | null {
  if (headers instanceof Headers) return headers.get(name);
  const value = headers[name];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

/** Validators built from tools' JSON Schemas, by schema text (few tools, many calls). */
const validators = new Map<string, z.ZodType>();
const MAX_VALIDATORS = 500;

function validatorFor(parameters: Record<string, unknown>): z.ZodType {
  const text = JSON.stringify(parameters);
  let validator = validators.get(text);
  if (!validator) {
    try {
      validator = z.fromJSONSchema(parameters as never);
    } catch {
      validator = z.unknown(); // a schema zod cannot read: the tool itself judges its arguments
    }
    if (validators.size >= MAX_VALIDATORS) validators.clear();
    validators.set(text, validator);
  }
  return validator;
}
