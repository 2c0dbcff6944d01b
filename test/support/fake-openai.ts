// A fake OpenAI Chat Completions server for tests: real HTTP on 127.0.0.1 so the real
// `openai` client (fetch, timeouts, error mapping, SSE parsing) is exercised, with injectable
// faults, scripted replies (text or tool calls), a deterministic `usage` on every answer, and
// streamed answers (`stream: true`) that can be paced, held mid-answer or cut, or, as many
// OpenAI-compatible servers do, a plain JSON completion instead (`streams: false`).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readJsonBody, sendJson, startHttpFake } from './http-fake.js';
import {
  answerDeltas,
  messageText,
  refusalOf,
  roleDelta,
  textOf,
  usageFor,
  wordDeltas,
  type AssistantMessage,
  type ChunkDelta,
  type Refusal,
  type Usage,
  type WireMessage,
} from './fake-openai-wire.js';

export {
  messageText,
  usageFor,
  wordDeltas,
  type AssistantMessage,
  type ChunkDelta,
  type ToolCallDelta,
  type Usage,
  type WireMessage,
  type WireToolCall,
} from './fake-openai-wire.js';

/**
 * `malformed` answers a message with no content (streamed: a chunk with neither content nor tool
 * calls). `cut` streams the first `afterDeltas` deltas of the answer the next answered call would
 * get (without taking it from the script), then destroys the socket with no `[DONE]`; a request
 * that did not ask to stream has its socket destroyed before any byte of the answer. `noChoices`
 * answers 200 with no `choices` (`'missing'`, the default) or `choices: []` (`'empty'`), the usage
 * still there: streamed, one chunk like that then `[DONE]`.
 */
export type Fault =
  | { kind: 'status'; status: number; retryAfter?: string; body?: unknown }
  | { kind: 'hang' }
  | { kind: 'malformed' }
  | { kind: 'delay'; ms: number }
  | { kind: 'cut'; afterDeltas: number }
  | { kind: 'noChoices'; choices?: 'missing' | 'empty' };

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
  /**
   * The content's streamed pieces exactly (their join is the content, which `content` then need not
   * repeat and cannot contradict: the deltas win). Without them a stream cuts the content into words.
   */
  deltas?: string[];
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
  /** A `cut` is a fault even though it began a 200; `aborted` is the client (or close()) hanging up first. */
  outcome: 'ok' | 'fault' | 'aborted';
  /** The request asked for `stream: true`. */
  stream: boolean;
  /** Deltas (content pieces and tool-call chunks, the role chunk not counted) written so far; 0 when not streamed. */
  deltasSent: number;
  /**
   * What the fake answered with a 200, set when the answer is decided (before any latency); for a
   * `cut`, the answer it began. A stream sends exactly this message, in deltas.
   */
  response?: { message: AssistantMessage; finishReason: 'stop' | 'tool_calls'; usage: Usage | undefined };
}

/** A streamed answer paused after some deltas, for a test that must act while tokens are flowing. */
export interface Hold {
  /**
   * Resolves once the stream is paused, its deltas handed to the socket; rejects if the stream ends
   * first (the client hung up, or close()), and never fails the run when nobody awaits it.
   */
  reached: Promise<RecordedCall>;
  /** Streams the rest of the answer (at once if the pause is not reached yet: the stream then never pauses). */
  release(): void;
}

export interface FakeOpenAI {
  url: string;
  calls: RecordedCall[];
  /** Every HTTP request received, unknown routes included (`calls` holds the completions only). */
  readonly requests: number;
  /** Replies queued by script() and not yet sent. */
  readonly scripted: number;
  /** Calls being answered now (past the checks of auth and of the request), the most at once so far, and the calls refused for `capacity`. */
  readonly load: { now: number; peak: number; refused: number };
  callsFor(userContent: string): RecordedCall[];
  enqueueFaults(...faults: Fault[]): void;
  setFaultPolicy(policy: ((call: RecordedCall, index: number) => Fault | undefined) | undefined): void;
  /** The time before a call is answered (for a stream: before its first chunk). */
  setLatency(ms: number | ((call: RecordedCall) => number)): void;
  /** The pause between two deltas of a stream, read before each one; 0 writes them back to back (still one write each). */
  setChunkInterval(ms: number): void;
  /**
   * Pauses the next streamed call that is answered normally (no fault, or a `delay`) after `deltas`
   * deltas, or before its finish chunk if it has fewer; holds queue up, one per such call in order.
   * close() ends a held stream (its socket destroyed, the call 'aborted').
   */
  holdAfter(deltas: number): Hold;
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
  /** The pause between two deltas of a stream (see setChunkInterval). Default 0. */
  chunkIntervalMs?: number;
  /**
   * Answer 400, with the real API's message, to requests it refuses: tool messages that answer no
   * pending tool call, tool calls left without their tool messages, `tools: []`, `tool_choice`
   * without tools, `stream_options` without `stream: true`. Default true.
   */
  strict?: boolean;
  /**
   * Default true. False answers a request that asks to stream with the plain JSON completion, as
   * many OpenAI-compatible servers and proxies do: no event stream, no deltas (`deltasSent` stays
   * 0), no holds taken; a `cut` destroys the socket before any byte.
   */
  streams?: boolean;
  /** The content-type of a plain JSON completion (streamed or not): default `application/json`; null sends none. */
  completionContentType?: string | null;
  /**
   * A provider with a fixed capacity: beyond `concurrent` calls being answered at once, a call is
   * refused at once with `429 rate_limit_exceeded` and `Retry-After: retryAfter` (default "1"),
   * as a rate-limited API does. See `FakeOpenAI.load`.
   */
  capacity?: { concurrent: number; retryAfter?: string };
}

// The hold state a stream consults: `resume` is set while it is paused.
interface PendingHold {
  after: number;
  released: boolean;
  resume?: () => void;
  reach(call: RecordedCall): void;
  fail(err: Error): void;
}

// What a stream writes: the role chunk's delta, the deltas pacing, holds and cuts count, and the end.
interface StreamPlan {
  first: ChunkDelta;
  deltas: ChunkDelta[];
  finishReason: 'stop' | 'tool_calls';
  usage: Usage | undefined;
}

// When a stream stops short: `cutAfter` destroys the socket, `hold` pauses it.
interface StreamStops {
  cutAfter?: number;
  hold?: PendingHold;
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

// A decided answer and the content pieces a stream of it sends.
interface Decided {
  response: NonNullable<RecordedCall['response']>;
  contentDeltas: string[];
}

export async function startFakeOpenAI(opts: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const calls: RecordedCall[] = [];
  const queue: Fault[] = [];
  const replies: ScriptedReply[] = [];
  const holds: PendingHold[] = [];
  let policy: ((call: RecordedCall, index: number) => Fault | undefined) | undefined;
  let replyPolicy: ReplyPolicy | undefined;
  let latency: number | ((call: RecordedCall) => number) = opts.latencyMs ?? 0;
  let chunkInterval = opts.chunkIntervalMs ?? 0;
  const answer = opts.answer ?? ((userContent: string) => `answer: ${userContent}`);
  const strict = opts.strict ?? true;
  const streams = opts.streams ?? true;
  const completionContentType = opts.completionContentType === undefined ? 'application/json' : opts.completionContentType;
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Map<ServerResponse, RecordedCall>();
  const capacity = opts.capacity;
  const load = { now: 0, peak: 0, refused: 0 };
  // Streams a `cut` destroyed: their outcome stays 'fault', not the 'aborted' of a hang-up.
  const cutOff = new WeakSet<ServerResponse>();
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
  // `take: false` only looks at the answer the next answered call would get (what a cut begins): the
  // script keeps it and no tool-call id is spent, so a retry streams the same answer whole.
  const decideResponse = (call: RecordedCall, take = true): Decided => {
    const reply = replyPolicy?.(call) ?? (take ? replies.shift() : replies[0]) ?? {};
    const content = reply.deltas ? reply.deltas.join('') : reply.content;
    let ids = toolCallIds;
    const message: AssistantMessage =
      reply.toolCalls === undefined
        ? { role: 'assistant', content: content === undefined ? answer(call.userContent, call) : content }
        : {
            role: 'assistant',
            content: content ?? null,
            tool_calls: reply.toolCalls.map((tc) => ({
              id: tc.id ?? `call_${++ids}`,
              type: 'function' as const,
              function: { name: tc.name, arguments: typeof tc.arguments === 'string' ? tc.arguments : JSON.stringify(tc.arguments) },
            })),
          };
    if (take) toolCallIds = ids;
    const computed = usageFor(call.rawMessages, messageText(message));
    const usage = reply.usage === null ? undefined : withOverrides(computed, reply.usage);
    const response: Decided['response'] = { message, finishReason: message.tool_calls?.length ? 'tool_calls' : 'stop', usage };
    return { response, contentDeltas: reply.deltas ?? wordDeltas(message.content ?? '') };
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

  const planOf = ({ response, contentDeltas }: Decided): StreamPlan => ({
    first: roleDelta(response.message),
    deltas: answerDeltas(response.message, contentDeltas),
    finishReason: response.finishReason,
    usage: response.usage,
  });

  // The streamed twin of the malformed completion: a role chunk with no content, then the end.
  const malformedPlan = (call: RecordedCall): StreamPlan => ({
    first: { role: 'assistant' },
    deltas: [],
    finishReason: 'stop',
    usage: usageFor(call.rawMessages, ''),
  });

  // A connection that dies mid-answer: no finish chunk, no [DONE], and the client sees a network error.
  const cut = (res: ServerResponse) => {
    cutOff.add(res);
    inFlight.delete(res);
    res.destroy();
  };

  // Server-Sent Events as the real API streams them: one `data:` event per chunk, every chunk of one
  // id, the role chunk, the deltas (paced by the chunk interval), the finish chunk, with
  // include_usage a last chunk with no choices and the usage (the others carry `usage: null`), `[DONE]`.
  const sendStream = (res: ServerResponse, call: RecordedCall, plan: StreamPlan, includeUsage: boolean, headers: Record<string, string>, stops: StreamStops = {}) => {
    if (res.destroyed || res.writableEnded) return;
    const envelope = { id: `chatcmpl-fake-${++seq}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: call.model };
    // Settles once the last chunk has reached the socket: a destroy discards writes still queued, and
    // the client of a cut stream must get the deltas before the connection dies.
    let flushed = Promise.resolve();
    const event = (body: object) => {
      flushed = new Promise((resolve) => res.write(`data: ${JSON.stringify({ ...envelope, ...body })}\n\n`, () => resolve()));
    };
    const choice = (delta: ChunkDelta, finishReason: StreamPlan['finishReason'] | null = null) =>
      event({ choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...(includeUsage ? { usage: null } : {}) });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
    choice(plan.first);

    const { cutAfter, hold } = stops;
    const cutAt = cutAfter === undefined ? undefined : Math.min(cutAfter, plan.deltas.length);
    const holdAt = hold === undefined ? undefined : Math.min(hold.after, plan.deltas.length);
    let paused = false;
    // A loop, not recursion, so a long answer at interval 0 does not grow the stack.
    const step = (): void => {
      for (;;) {
        if (res.destroyed) return; // the client hung up, or close()
        const sent = call.deltasSent;
        if (sent === cutAt) return void flushed.then(() => cut(res));
        if (hold && sent === holdAt && !paused) {
          paused = true;
          // Once the deltas are on the socket, so a test that acts on `reached` acts with them sent.
          void flushed.then(() => hold.reach(call));
          if (!hold.released) return void (hold.resume = step);
        }
        const delta = plan.deltas[sent];
        if (delta === undefined) break;
        choice(delta);
        call.deltasSent = sent + 1;
        if (chunkInterval > 0 && call.deltasSent < plan.deltas.length) return later(chunkInterval, step);
      }
      choice({}, plan.finishReason);
      if (includeUsage && plan.usage) event({ choices: [], usage: plan.usage });
      res.end('data: [DONE]\n\n');
    };
    step();
  };

  // A 200 completion, under the content-type the options say (a JSON error goes through sendJson).
  const sendCompletion = (res: ServerResponse, body: object, headers: Record<string, string>) => {
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(200, { ...(completionContentType === null ? {} : { 'content-type': completionContentType }), ...headers });
    res.end(JSON.stringify(body));
  };

  // The `noChoices` fault: a completion (or one chunk, then [DONE]) with the usage and no choices.
  const sendChoiceless = (res: ServerResponse, call: RecordedCall, streamed: boolean, choices: 'missing' | 'empty', headers: Record<string, string>) => {
    const { choices: _choices, ...rest } = completion(call, undefined);
    const body = { ...rest, ...(choices === 'empty' ? { choices: [] } : {}) };
    if (!streamed) return sendCompletion(res, body, headers);
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
    res.write(`data: ${JSON.stringify({ ...body, object: 'chat.completion.chunk' })}\n\n`);
    res.end('data: [DONE]\n\n');
  };

  const holdAfter = (after: number): Hold => {
    let reach: (call: RecordedCall) => void = () => undefined;
    let fail: (err: Error) => void = () => undefined;
    const reached = new Promise<RecordedCall>((resolve, reject) => {
      reach = resolve;
      fail = reject;
    });
    // A hold nobody awaits must not fail the run as an unhandled rejection when its stream ends early.
    reached.catch(() => undefined);
    const state: PendingHold = { after, released: false, reach, fail };
    holds.push(state);
    const release = () => {
      state.released = true;
      const resume = state.resume;
      state.resume = undefined;
      resume?.();
    };
    return { reached, release };
  };

  const handleCompletion = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readJsonBody(req);
    const authHeader = req.headers.authorization;
    const call: RecordedCall = {
      at: Date.now(),
      model: '',
      messages: [],
      rawMessages: [],
      tools: undefined,
      toolChoice: undefined,
      userContent: '',
      outcome: 'ok',
      stream: false,
      deltasSent: 0,
    };
    if (authHeader !== undefined) call.authorization = authHeader;
    const index = calls.push(call) - 1;
    // Registered before any answer so a client timeout during hang/latency is observed.
    inFlight.set(res, call);
    res.on('close', () => {
      inFlight.delete(res);
      if (!res.writableFinished && !cutOff.has(res)) call.outcome = 'aborted';
    });
    const headers = { 'x-request-id': `req_fake_${index}` };

    if (body.json === undefined) {
      call.outcome = 'fault';
      return sendJson(res, 400, errorBody(400, 'We could not parse the JSON body of your request.'), headers);
    }
    const parsed = (body.json ?? {}) as {
      model?: unknown;
      messages?: unknown;
      tools?: unknown;
      tool_choice?: unknown;
      stream?: unknown;
      stream_options?: { include_usage?: unknown } | null;
    };
    call.model = typeof parsed.model === 'string' ? parsed.model : '';
    call.rawMessages = toWireMessages(parsed.messages);
    call.messages = call.rawMessages.map((m) => ({ role: String(m.role ?? ''), content: textOf(m.content) }));
    call.tools = Array.isArray(parsed.tools) ? (parsed.tools as unknown[]) : undefined;
    call.toolChoice = parsed.tool_choice;
    call.userContent = call.messages.find((m) => m.role === 'user')?.content ?? '';
    call.stream = parsed.stream === true;
    const includeUsage = parsed.stream_options?.include_usage === true;
    // Whether the answer is an event stream: asked for, and this server streams.
    const streamed = call.stream && streams;

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

    if (capacity && load.now >= capacity.concurrent) {
      load.refused++;
      call.outcome = 'fault';
      return sendJson(res, 429, errorBody(429, 'Rate limit reached for requests. Please try again later.'), {
        ...headers,
        'retry-after': capacity.retryAfter ?? '1',
      });
    }
    load.now++;
    load.peak = Math.max(load.peak, load.now);
    res.on('close', () => load.now--);

    const fault = policy?.(call, index) ?? queue.shift();
    const baseLatency = typeof latency === 'function' ? latency(call) : latency;
    const answerNormally = (extraMs: number) => {
      const decided = decideResponse(call);
      call.response = decided.response;
      // Taken on arrival too, so holds line up with the streamed calls in order.
      const hold = streamed ? holds.shift() : undefined;
      if (hold) res.on('close', () => hold.fail(new Error('The stream ended before its hold was reached.')));
      later(baseLatency + extraMs, () =>
        streamed ? sendStream(res, call, planOf(decided), includeUsage, headers, { hold }) : sendCompletion(res, completion(call, call.response), headers),
      );
    };

    switch (fault?.kind) {
      case undefined:
        return answerNormally(0);
      case 'delay':
        // A slow success is still a success from the client's point of view.
        return answerNormally(fault.ms);
      case 'malformed':
        call.outcome = 'fault';
        return later(baseLatency, () =>
          streamed ? sendStream(res, call, malformedPlan(call), includeUsage, headers) : sendCompletion(res, completion(call, undefined), headers),
        );
      case 'cut': {
        call.outcome = 'fault';
        if (!streamed) return later(baseLatency, () => cut(res));
        const decided = decideResponse(call, false);
        call.response = decided.response;
        const cutAfter = fault.afterDeltas;
        return later(baseLatency, () => sendStream(res, call, planOf(decided), includeUsage, headers, { cutAfter }));
      }
      case 'noChoices':
        call.outcome = 'fault';
        return later(baseLatency, () => sendChoiceless(res, call, streamed, fault.choices ?? 'missing', headers));
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
        // Held streams end with their sockets (the server drops every connection); holds no call took fail now.
        for (const hold of holds.splice(0)) hold.fail(new Error('The fake OpenAI server closed before the hold was used.'));
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
    get load() {
      return { ...load };
    },
    callsFor: (userContent) => calls.filter((c) => c.userContent === userContent),
    enqueueFaults: (...faults) => void queue.push(...faults),
    setFaultPolicy: (p) => void (policy = p),
    setLatency: (ms) => void (latency = ms),
    setChunkInterval: (ms) => void (chunkInterval = ms),
    holdAfter,
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
