// A fake OpenAI Chat Completions server for tests: real HTTP on 127.0.0.1 so the real
// `openai` client (fetch, timeouts, error mapping) is exercised, with injectable faults.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readJsonBody, sendJson, startHttpFake } from './http-fake.js';

export type Fault =
  | { kind: 'status'; status: number; retryAfter?: string; body?: unknown }
  | { kind: 'hang' }
  | { kind: 'malformed' }
  | { kind: 'delay'; ms: number };

export interface RecordedCall {
  at: number;
  model: string;
  messages: { role: string; content: string }[];
  userContent: string;
  authorization?: string;
  outcome: 'ok' | 'fault' | 'aborted';
}

export interface FakeOpenAI {
  url: string;
  calls: RecordedCall[];
  /** Every HTTP request received, unknown routes included (`calls` holds the completions only). */
  readonly requests: number;
  callsFor(userContent: string): RecordedCall[];
  enqueueFaults(...faults: Fault[]): void;
  setFaultPolicy(policy: ((call: RecordedCall, index: number) => Fault | undefined) | undefined): void;
  setLatency(ms: number | ((call: RecordedCall) => number)): void;
  close(): Promise<void>;
}

export interface FakeOpenAIOptions {
  answer?: (userContent: string, call: RecordedCall) => string;
  latencyMs?: number;
  requireApiKey?: string;
}

// Mirrors the `type`/`code` pairs the real API sends, so error classifiers see realistic bodies.
const ERROR_KINDS: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
};

function errorBody(status: number, message: string) {
  const kind = ERROR_KINDS[status] ?? { type: status >= 500 ? 'server_error' : 'invalid_request_error', code: null };
  return { error: { message, type: kind.type, param: null, code: kind.code } };
}

// OpenAI allows content as a string or an array of parts; tests only care about the text.
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String(p.text) : '')).join('');
  }
  return content == null ? '' : JSON.stringify(content);
}

export async function startFakeOpenAI(opts: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const calls: RecordedCall[] = [];
  const queue: Fault[] = [];
  let policy: ((call: RecordedCall, index: number) => Fault | undefined) | undefined;
  let latency: number | ((call: RecordedCall) => number) = opts.latencyMs ?? 0;
  const answer = opts.answer ?? ((userContent: string) => `answer: ${userContent}`);
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Map<ServerResponse, RecordedCall>();
  let seq = 0;

  const later = (ms: number, fn: () => void) => {
    if (ms <= 0) return fn();
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  const completion = (call: RecordedCall, content: string | undefined) => {
    // Omitting `content` (not even null) is the nastiest shape a real proxy has produced.
    const message = content === undefined ? { role: 'assistant' } : { role: 'assistant', content };
    return {
      id: `chatcmpl-fake-${++seq}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: call.model,
      choices: [{ index: 0, message, finish_reason: 'stop', logprobs: null }],
      usage: { prompt_tokens: call.userContent.length, completion_tokens: content?.length ?? 0, total_tokens: call.userContent.length + (content?.length ?? 0) },
    };
  };

  const handleCompletion = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readJsonBody(req);
    const authHeader = req.headers.authorization;
    const call: RecordedCall = { at: Date.now(), model: '', messages: [], userContent: '', outcome: 'ok' };
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
    const parsed = body.json as { model?: unknown; messages?: unknown };
    call.model = typeof parsed.model === 'string' ? parsed.model : '';
    const msgs = Array.isArray(parsed.messages) ? (parsed.messages as { role?: unknown; content?: unknown }[]) : [];
    call.messages = msgs.map((m) => ({ role: String(m?.role ?? ''), content: textOf(m?.content) }));
    call.userContent = call.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';

    // Auth is checked before faults so a bad key never consumes a queued fault.
    if (opts.requireApiKey !== undefined && authHeader !== `Bearer ${opts.requireApiKey}`) {
      call.outcome = 'fault';
      return sendJson(res, 401, errorBody(401, 'Incorrect API key provided.'), headers);
    }

    const fault = policy?.(call, index) ?? queue.shift();
    const baseLatency = typeof latency === 'function' ? latency(call) : latency;
    const answerNormally = (extraMs: number, content: () => string | undefined) =>
      later(baseLatency + extraMs, () => sendJson(res, 200, completion(call, content()), headers));

    switch (fault?.kind) {
      case undefined:
        return answerNormally(0, () => answer(call.userContent, call));
      case 'delay':
        // A slow success is still a success from the client's point of view.
        return answerNormally(fault.ms, () => answer(call.userContent, call));
      case 'malformed':
        call.outcome = 'fault';
        return answerNormally(0, () => undefined);
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
    callsFor: (userContent) => calls.filter((c) => c.userContent === userContent),
    enqueueFaults: (...faults) => void queue.push(...faults),
    setFaultPolicy: (p) => void (policy = p),
    setLatency: (ms) => void (latency = ms),
    close: server.close,
  };
}
