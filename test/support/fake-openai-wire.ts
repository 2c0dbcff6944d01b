// The Chat Completions wire as the fake OpenAI server sees it: message shapes, the fake's usage
// rule, how an answer is cut into streamed deltas, and the requests the real API refuses with a
// 400 (so the fake refuses them too).

/** A request message as sent: `content` may be a string, an array of parts or null. */
export interface WireMessage {
  role?: unknown;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: unknown;
  [key: string]: unknown;
}

export interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** `choices[0].message` of an answer: text, or tool calls with null (or some) content. */
export interface AssistantMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: WireToolCall[];
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** Anything with a content and maybe tool calls: a request message, or the SDK's answer message. */
export interface MessageLike {
  content?: unknown;
  tool_calls?: unknown;
}

// OpenAI allows content as a string or an array of parts; tests only care about the text.
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String(p.text) : '')).join('');
  }
  return content == null ? '' : JSON.stringify(content);
}

/** The text the usage rule counts for one message: its content, then each tool call's name and arguments. */
export function messageText(message: MessageLike): string {
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as unknown[]) : [];
  const callText = calls.map((c) => {
    const fn = c !== null && typeof c === 'object' && 'function' in c ? (c.function as { name?: unknown; arguments?: unknown }) : {};
    return `${textOf(fn.name)}${textOf(fn.arguments)}`;
  });
  return textOf(message.content) + callText.join('');
}

/**
 * The fake's usage rule, one token per 4 characters rounded up: prompt_tokens counts the
 * messageText of every request message, completion_tokens the answer's text (for a tool-call
 * answer, `messageText(choices[0].message)`); total is their sum.
 */
export function usageFor(messages: readonly MessageLike[], answerText: string): Usage {
  const promptChars = messages.reduce((n, m) => n + messageText(m).length, 0);
  const prompt = Math.ceil(promptChars / 4);
  const completion = Math.ceil(answerText.length / 4);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** `choices[0].delta` of a streamed chunk, in the shapes the fake sends. */
export interface ChunkDelta {
  role?: 'assistant';
  content?: string | null;
  tool_calls?: ToolCallDelta[];
}

/** A piece of one tool call: the first names it (`id`, `type`, `name`), the rest carry its arguments. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

/** How many characters of a tool call's arguments each of its chunks carries, as the real API cuts them (roughly). */
export const ARGUMENT_FRAGMENT_CHARS = 8;

/**
 * A text cut into word-sized deltas, each word with the whitespace after it ("Hello world, friend"
 * → "Hello ", "world, ", "friend"); leading whitespace is a piece of its own. The join is the text.
 */
export function wordDeltas(text: string): string[] {
  return text.match(/^\s+|\S+\s*/g) ?? [];
}

/** The delta of a stream's first chunk: the role, with an empty content, or null content for a tool-call answer without text. */
export function roleDelta(message: AssistantMessage): ChunkDelta {
  return { role: 'assistant', content: message.content === null ? null : '' };
}

/**
 * The deltas that stream `message` after its role chunk, in the order the real API sends them: the
 * content pieces, then for each tool call a chunk that names it and chunks of its arguments.
 */
export function answerDeltas(message: AssistantMessage, contentPieces: readonly string[]): ChunkDelta[] {
  const content = contentPieces.map((piece): ChunkDelta => ({ content: piece }));
  const calls = (message.tool_calls ?? []).flatMap((call, index): ChunkDelta[] => {
    const head: ToolCallDelta = { index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } };
    const fragments = fragmentsOf(call.function.arguments).map((args): ToolCallDelta => ({ index, function: { arguments: args } }));
    return [head, ...fragments].map((tc) => ({ tool_calls: [tc] }));
  });
  return [...content, ...calls];
}

function fragmentsOf(text: string): string[] {
  const fragments: string[] = [];
  for (let at = 0; at < text.length; at += ARGUMENT_FRAGMENT_CHARS) fragments.push(text.slice(at, at + ARGUMENT_FRAGMENT_CHARS));
  return fragments;
}

/** A 400 the real API would send: its message, `param` and `code`. */
export interface Refusal {
  message: string;
  param: string | null;
  code: string | null;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Why the real API would refuse this request body, or undefined when it would take it. */
export function refusalOf(body: unknown): Refusal | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { message: 'We could not parse the JSON body of your request.', param: null, code: null };
  }
  const request = body as { messages?: unknown; tools?: unknown; tool_choice?: unknown; stream?: unknown; stream_options?: unknown };
  if (request.stream !== true && request.stream_options != null) {
    return { message: "The 'stream_options' parameter is only allowed when 'stream' is enabled.", param: 'stream_options', code: null };
  }
  if (!Array.isArray(request.messages)) {
    return { message: "Missing required parameter: 'messages'.", param: 'messages', code: 'missing_required_parameter' };
  }
  return toolsRefusal(request.tools, request.tool_choice) ?? sequenceRefusal(request.messages as unknown[]);
}

function toolsRefusal(tools: unknown, toolChoice: unknown): Refusal | undefined {
  if (tools === undefined) {
    return toolChoice === undefined
      ? undefined
      : { message: "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", param: 'tool_choice', code: null };
  }
  if (!Array.isArray(tools)) return { message: "Invalid type for 'tools': expected an array.", param: 'tools', code: 'invalid_type' };
  if (tools.length === 0) {
    return {
      message: "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      param: 'tools',
      code: 'empty_array',
    };
  }
  for (const [i, tool] of (tools as { type?: unknown; function?: { name?: unknown } }[]).entries()) {
    const name = tool?.function?.name;
    if (tool?.type === 'function' && (typeof name !== 'string' || !TOOL_NAME.test(name))) {
      return {
        message: `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        param: `tools[${i}].function.name`,
        code: 'invalid_value',
      };
    }
  }
  return undefined;
}

// Every assistant tool call must be answered by a tool message right after it, and every tool
// message must answer one of them: the real API checks both, and a loop that builds its
// conversation wrongly would otherwise pass against a lenient fake.
function sequenceRefusal(messages: unknown[]): Refusal | undefined {
  let pending: { at: number; ids: Set<string> } | undefined;
  const unanswered = (): Refusal | undefined =>
    pending && pending.ids.size > 0
      ? {
          message: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...pending.ids].join(', ')}`,
          param: `messages.[${pending.at}].role`,
          code: null,
        }
      : undefined;
  for (const [i, raw] of messages.entries()) {
    const m = (raw ?? {}) as WireMessage;
    if (m.role === 'tool') {
      if (typeof m.tool_call_id !== 'string') {
        return { message: `Missing required parameter: 'messages.[${i}].tool_call_id'.`, param: `messages.[${i}].tool_call_id`, code: 'missing_required_parameter' };
      }
      if (!pending?.ids.delete(m.tool_call_id)) {
        return {
          message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          param: `messages.[${i}].role`,
          code: null,
        };
      }
      continue;
    }
    const refusal = unanswered();
    if (refusal) return refusal;
    pending = undefined;
    if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
      const ids = (m.tool_calls as { id?: unknown }[]).map((c) => c?.id).filter((id): id is string => typeof id === 'string');
      pending = { at: i, ids: new Set(ids) };
    }
  }
  return unanswered();
}
