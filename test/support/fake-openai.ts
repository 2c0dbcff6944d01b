// A fake OpenAI Chat Completions server for tests: real HTTP on 127.0.0.1 so the real
// `openai` client (fetch, timeouts, error mapping) is exercised, with injectable faults, scripted
// replies (text or tool calls) and a deterministic `usage` on every answer.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readJsonBody, sendJson, startHttpFake } from './http-fake.js';
import { messageText, refusalOf, textOf, usageFor, type AssistantMessage, type Refusal, type Usage, type WireMessage } from './fake-openai-wire.js';

export { messageText, usageFor, type AssistantMessage, type Usage, type WireMessage, type WireToolCall } from './fake-openai-wire.js';

export type Fault =
  | { kind: 'status'; status: number; retryAfter?: string; body?: unknown }
  | { kind: 'hang' }
  | { kind: 'malformed' }
  | { kind: 'delay'; ms: number };

/** One tool call of a scripted reply; `id` defaults to `call_<n>`, unique in the server. */
export interface ScriptedToolCall {
  id?: string;
  name: string;
  /** An object is sent JSON-stringified; a string is sent as is, so a test can send malformed JSON. */
  arguments: string | object;
}

/**
 * What the fake answers for one call. With `toolCalls` (even `[]`) the message carries `tool_calls`
 * and `content` defaults to null; without them and without `content`, the `answer` option's text
 * is sent. `usage` replaces the computed fields it names (total = prompt + completion unless
 * given); `null` sends no `usage` at all, as some providers do.
 */
export interface ScriptedReply {
  content?: string | null;
  toolCalls?: ScriptedToolCall[];
  usage?: Partial<Usage> | null;
}

export type ReplyPolicy = (call: RecordedCall) => ScriptedReply | undefined;

export interface RecordedCall {
  at: number;
  model: string;
  /** Each message's role and text only (parts joined); `rawMessages` has them as sent. */
  messages: { role: string; content: string }[];
  /** The messages exactly as the request had them: `tool_calls`, `tool_call_id`, null content and all. */
  rawMessages: WireMessage[];
  /** The request's `tools` array, undefined when it had none. */
  tools: unknown[] | undefined;
  /** The request's `tool_choice`, undefined when it had none. */
  toolChoice: unknown;
  /** The first user message's text: the task, however long the exchange that follows it. */
  userContent: string;
  authorization?: string;
  outcome: 'ok' | 'fault' | 'aborted';
  /** What the fake answered with a 200, set when the answer is decided (before any latency). */
  response?: { message: AssistantMessage; finishReason: 'stop' | 'tool_calls'; usage: Usage | undefined };
}

export interface FakeOpenAI {
  url: string;
  calls: RecordedCall[];
  /** Every HTTP request received, unknown routes included (`calls` holds the completions only). */
  readonly requests: number;
  /** Replies queued by script() and not yet sent. */
  readonly scripted: number;
  callsFor(userContent: string): RecordedCall[];
  enqueueFaults(...faults: Fault[]): void;
  setFaultPolicy(policy: ((call: RecordedCall, index: number) => Fault | undefined) | undefined): void;
  setLatency(ms: number | ((call: RecordedCall) => number)): void;
  /** Queues replies, sent in order to the calls that get no fault and no reply from the policy. */
  script(...replies: ScriptedReply[]): void;
  /** Asked first for every answered call; undefined falls through to the script, then to `answer`. */
  setReplyPolicy(policy: ReplyPolicy | undefined): void;
  close(): Promise<void>;
}

export interface FakeOpenAIOptions {
  answer?: (userContent: string, call: RecordedCall) => string;
  latencyMs?: number;
  requireApiKey?: string;
  /**
   * Answer 400, with the real API's message, to requests it refuses: tool messages that answer no
   * pending tool call, tool calls left without their tool messages, `tools: []`, `tool_choice`
   * without tools, `stream: true` (not implemented here). Default true.
   */
  strict?: boolean;
}

// Mirrors the `type`/`code` pairs the real API sends, so error classifiers see realistic bodies.
const ERROR_KINDS: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
};

function errorBody(status: number, message: string, refusal?: Refusal) {
  const kind = ERROR_KINDS[status] ?? { type: status >= 500 ? 'server_error' : 'invalid_request_error', code: null };
  return { error: { message, type: kind.type, param: refusal?.param ?? null, code: refusal ? refusal.code : kind.code } };
}

function toWireMessages(messages: unknown): WireMessage[] {
  if (!Array.isArray(messages)) return [];
  return messages.map((m) => (m !== null && typeof m === 'object' ? (m as WireMessage) : { role: '', content: m }));
}

export async function startFakeOpenAI(opts: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const calls: RecordedCall[] = [];
  const queue: Fault[] = [];
  const replies: ScriptedReply[] = [];
  let policy: ((call: RecordedCall, index: number) => Fault | undefined) | undefined;
  let replyPolicy: ReplyPolicy | undefined;
  let latency: number | ((call: RecordedCall) => number) = opts.latencyMs ?? 0;
  const answer = opts.answer ?? ((userContent: string) => `answer: ${userContent}`);
  const strict = opts.strict ?? true;
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Map<ServerResponse, RecordedCall>();
  let seq = 0;
  let toolCallIds = 0;

  const later = (ms: number, fn: () => void) => {
    if (ms <= 0) return fn();
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  // Decided on arrival, like the faults, so queued replies line up with call order whatever the latency.
  const decideResponse = (call: RecordedCall): NonNullable<RecordedCall['response']> => {
    const reply = replyPolicy?.(call) ?? replies.shift() ?? {};
    const message: AssistantMessage =
      reply.toolCalls === undefined
        ? { role: 'assistant', content: reply.content === undefined ? answer(call.userContent, call) : reply.content }
        : {
            role: 'assistant',
            content: reply.content ?? null,
            tool_calls: reply.toolCalls.map((tc) => ({
              id: tc.id ?? `call_${++toolCallIds}`,
              type: 'function' as const,
              function: { name: tc.name, arguments: typeof tc.arguments === 'string' ? tc.arguments : JSON.stringify(tc.arguments) },
            })),
          };
    const computed = usageFor(call.rawMessages, messageText(message));
    const usage = reply.usage === null ? undefined : withOverrides(computed, reply.usage);
    return { message, finishReason: message.tool_calls?.length ? 'tool_calls' : 'stop', usage };
  };

  const completion = (call: RecordedCall, response: RecordedCall['response']) => {
    // A malformed answer omits `content` (not even null): the nastiest shape a real proxy has produced.
    const message = response?.message ?? { role: 'assistant' };
    const usage = response ? response.usage : usageFor(call.rawMessages, '');
    return {
      id: `chatcmpl-fake-${++seq}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: call.model,
      choices: [{ index: 0, message, finish_reason: response?.finishReason ?? 'stop', logprobs: null }],
      ...(usage ? { usage } : {}),
    };
  };

  const handleCompletion = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readJsonBody(req);
    const authHeader = req.headers.authorization;
    const call: RecordedCall = { at: Date.now(), model: '', messages: [], rawMessages: [], tools: undefined, toolChoice: undefined, userContent: '', outcome: 'ok' };
    if (authHeader !== undefined) call.authorization = authHeader;
    const index = calls.push(call) - 1;
    // Registered before any answer so a client timeout during hang/latency is observed.
    inFlight.set(res, call);
    res.on('close', () => {
      inFlight.delete(res);
      if (!res.writableFinished) call.outcome = 'aborted';
    });
    const headers = { 'x-request-id': `req_fake_${index}` };

    if (body.json === undefined) {
      call.outcome = 'fault';
      return sendJson(res, 400, errorBody(400, 'We could not parse the JSON body of your request.'), headers);
    }
    const parsed = (body.json ?? {}) as { model?: unknown; messages?: unknown; tools?: unknown; tool_choice?: unknown };
    call.model = typeof parsed.model === 'string' ? parsed.model : '';
    call.rawMessages = toWireMessages(parsed.messages);
    call.messages = call.rawMessages.map((m) => ({ role: String(m.role ?? ''), content: textOf(m.content) }));
    call.tools = Array.isArray(parsed.tools) ? (parsed.tools as unknown[]) : undefined;
    call.toolChoice = parsed.tool_choice;
    call.userContent = call.messages.find((m) => m.role === 'user')?.content ?? '';

    // Auth is checked before faults so a bad key never consumes a queued fault.
    if (opts.requireApiKey !== undefined && authHeader !== `Bearer ${opts.requireApiKey}`) {
      call.outcome = 'fault';
      return sendJson(res, 401, errorBody(401, 'Incorrect API key provided.'), headers);
    }
    // So is a request the real API would refuse: it consumes neither a fault nor a scripted reply.
    const refusal = strict ? refusalOf(body.json) : undefined;
    if (refusal) {
      call.outcome = 'fault';
      return sendJson(res, 400, errorBody(400, refusal.message, refusal), headers);
    }

    const fault = policy?.(call, index) ?? queue.shift();
    const baseLatency = typeof latency === 'function' ? latency(call) : latency;
    const answerNormally = (extraMs: number) => {
      call.response = decideResponse(call);
      later(baseLatency + extraMs, () => sendJson(res, 200, completion(call, call.response), headers));
    };

    switch (fault?.kind) {
      case undefined:
        return answerNormally(0);
      case 'delay':
        // A slow success is still a success from the client's point of view.
        return answerNormally(fault.ms);
      case 'malformed':
        call.outcome = 'fault';
        return later(baseLatency, () => sendJson(res, 200, completion(call, undefined), headers));
      case 'hang':
        call.outcome = 'fault';
        return;
      case 'status': {
        call.outcome = 'fault';
        const extra: Record<string, string> = fault.retryAfter !== undefined ? { 'retry-after': fault.retryAfter } : {};
        const body = fault.body !== undefined ? fault.body : errorBody(fault.status, `Injected fault: HTTP ${fault.status}`);
        return sendJson(res, fault.status, body, { ...headers, ...extra });
      }
    }
  };

  const server = await startHttpFake(
    (req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (req.method === 'POST' && path === '/v1/chat/completions') {
        handleCompletion(req, res).catch((err: unknown) => sendJson(res, 500, errorBody(500, String(err))));
        return;
      }
      sendJson(res, 404, errorBody(404, `Unknown route ${req.method} ${path}`));
    },
    {
      onClose: () => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        // Marked here because res 'close' may fire only after close() has resolved.
        for (const [res, call] of inFlight) if (!res.writableFinished) call.outcome = 'aborted';
      },
    },
  );

  return {
    url: `${server.url}/v1`,
    calls,
    get requests() {
      return server.requests;
    },
    get scripted() {
      return replies.length;
    },
    callsFor: (userContent) => calls.filter((c) => c.userContent === userContent),
    enqueueFaults: (...faults) => void queue.push(...faults),
    setFaultPolicy: (p) => void (policy = p),
    setLatency: (ms) => void (latency = ms),
    script: (...r) => void replies.push(...r),
    setReplyPolicy: (p) => void (replyPolicy = p),
    close: server.close,
  };
}

function withOverrides(computed: Usage, given: Partial<Usage> | undefined): Usage {
  const prompt = given?.prompt_tokens ?? computed.prompt_tokens;
  const completion = given?.completion_tokens ?? computed.completion_tokens;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: given?.total_tokens ?? prompt + completion };
}
