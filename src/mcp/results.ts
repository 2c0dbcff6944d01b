/**
 * What an MCP `tools/call` result becomes for the model: one tool message. Text parts are kept as
 * text; parts the model cannot read as text (images, audio, binary resources) are described as JSON
 * (`type`, `mimeType`, `size` in bytes), with a resource's text included; a result that is only
 * structured content is its JSON.
 */
import type { McpCallOutcome } from './types.js';

/** The parts of a result as the SDK parses them (kept loose: servers send what they like). */
interface ResultLike {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
  /** A server speaking an older protocol version may answer `{ toolResult }`. */
  toolResult?: unknown;
}

export function toCallOutcome(result: ResultLike): McpCallOutcome {
  const parts = Array.isArray(result.content) ? (result.content as unknown[]) : [];
  let texts = parts.map(partText);
  if (texts.length === 0 && result.structuredContent !== undefined) texts = [JSON.stringify(result.structuredContent)];
  if (texts.length === 0 && result.toolResult !== undefined) {
    texts = [typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult)];
  }
  return { ok: result.isError !== true, content: texts.join('\n') };
}

function partText(part: unknown): string {
  if (typeof part !== 'object' || part === null) return JSON.stringify(part ?? null);
  const p = part as Record<string, unknown>;
  switch (p.type) {
    case 'text':
      return typeof p.text === 'string' ? p.text : '';
    case 'image':
    case 'audio':
      return JSON.stringify({ type: p.type, mimeType: p.mimeType ?? null, size: base64Size(p.data) });
    case 'resource': {
      const r = (typeof p.resource === 'object' && p.resource !== null ? p.resource : {}) as Record<string, unknown>;
      return JSON.stringify({
        type: 'resource',
        uri: r.uri ?? null,
        mimeType: r.mimeType ?? null,
        ...(typeof r.text === 'string' ? { size: Buffer.byteLength(r.text), text: r.text } : { size: base64Size(r.blob) }),
      });
    }
    case 'resource_link':
      return JSON.stringify({
        type: 'resource_link',
        uri: p.uri ?? null,
        name: p.name ?? null,
        mimeType: p.mimeType ?? null,
        ...(typeof p.description === 'string' ? { description: p.description } : {}),
        ...(typeof p.size === 'number' ? { size: p.size } : {}),
      });
    default:
      return JSON.stringify(part);
  }
}

/** Bytes a base64 string decodes to (without decoding it). */
function base64Size(data: unknown): number {
  if (typeof data !== 'string') return 0;
  const clean = data.replace(/\s/g, '');
  const padding = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((clean.length * 3) / 4) - padding);
}
