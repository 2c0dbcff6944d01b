import type { FC } from 'hono/jsx';
import { shorten } from '../../core/errors.js';
import { asText, pick } from './format.js';
import type { Usage } from './exchange.js';

/** A text cut at `max` characters, the whole of it one click away. */
export const Text: FC<{ value: string | undefined; max?: number }> = ({ value, max = 280 }) => {
  if (value === undefined || value === '') return <span class="muted">—</span>;
  if (value.length <= max) return <div class="text">{value}</div>;
  return (
    <details>
      <summary class="text">{shorten(value, max)}</summary>
      <div class="text">{value}</div>
    </details>
  );
};

/** A failed call's error: its message, with kind, code and status when it has them. */
export const ErrorText: FC<{ error: unknown }> = ({ error }) => {
  const message = asText(pick(error, 'message')) ?? asText(error) ?? 'failed';
  const details = [pick(error, 'kind'), pick(error, 'code'), pick(error, 'status')].filter((v) => v !== undefined && v !== null);
  return (
    <div class="fail text">
      {message}
      {details.length ? <span class="small"> ({details.join(', ')})</span> : null}
    </div>
  );
};

/** A tool call's JSON argument text, pretty-printed when it is JSON. */
export function argumentsText(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 1).replace(/\n\s*/g, ' ');
  } catch {
    return text;
  }
}

/** `20 + 5 = 25 tokens` (prompt + completion = total), with the number of LLM calls when known. */
export function tokensText(usage: Usage): string {
  const calls = usage.llmCalls === undefined ? '' : ` in ${usage.llmCalls} LLM call${usage.llmCalls === 1 ? '' : 's'}`;
  return `${usage.promptTokens} + ${usage.completionTokens} = ${usage.totalTokens} tokens${calls}`;
}
