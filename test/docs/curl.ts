// The curl commands of the docs, read into requests: what docs/curl.test.ts sends through the app.
import { codeBlocks } from './markdown.js';

export interface CurlRequest {
  /** Where the command is: file and 1-based line. */
  at: string;
  method: string;
  /** Path and query, as the app sees them. */
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
  /** From a `# → STATUS [JSON]` comment after the command; without one, any 2xx. */
  expected: { status: number; body: unknown } | undefined;
}

const SERVER = /^(?:https?:\/\/)?(?:localhost|127\.0\.0\.1):3000(\/.*)?$/;

/** Every curl command of the shell blocks of a markdown file, in order. */
export function curlRequests(file: string): CurlRequest[] {
  return codeBlocks(file)
    .filter((b) => ['sh', 'bash', 'shell', 'console'].includes(b.lang))
    .flatMap((block) => {
      const requests: CurlRequest[] = [];
      const lines = block.content.split('\n');
      for (let i = 0; i < lines.length; i++) {
        const start = i;
        let command = lines[i]!;
        while (command.endsWith('\\') && i + 1 < lines.length) command = `${command.slice(0, -1)} ${lines[++i]!.trim()}`;
        if (!/^\s*curl\s/.test(command)) continue;
        const at = `${file}:${block.line + 1 + start}`;
        const expectation = /^\s*# → (\d{3})(?:\s+(.*))?$/.exec(lines[i + 1] ?? '');
        requests.push({ at, ...parseCurl(at, command), expected: expectation ? { status: Number(expectation[1]), body: jsonOrUndefined(expectation[2]) } : undefined });
      }
      return requests;
    });
}

function jsonOrUndefined(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // an excerpt ("{"id":"a1",...}"): shown to the reader, not checked
  }
}

function parseCurl(at: string, command: string): Omit<CurlRequest, 'at' | 'expected'> {
  const words = shellWords(command);
  const headers: Record<string, string> = {};
  let method: string | undefined;
  let body: string | undefined;
  let url: string | undefined;
  for (let i = 1; i < words.length; i++) {
    const word = words[i]!;
    const value = () => {
      const next = words[++i];
      if (next === undefined) throw new Error(`${at}: ${word} needs a value.`);
      return next;
    };
    if (/^-[sSN]+$/.test(word)) continue; // silent, show errors, no buffering: nothing for the request
    else if (word === '-X') method = value();
    else if (word === '-H') {
      const header = value();
      const colon = header.indexOf(':');
      headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
    } else if (word === '-d' || word === '--data') body = value();
    else if (word === '-o' || word === '-w') value(); // where the output goes: not part of the request
    else if (word.startsWith('-')) throw new Error(`${at}: curl option ${word} is not understood by the docs test; add it to test/docs/curl.ts.`);
    else if (url === undefined) url = word;
    else throw new Error(`${at}: a second URL (${word}).`);
  }
  const match = url === undefined ? null : SERVER.exec(url);
  if (!match) throw new Error(`${at}: the docs' curl commands go to the default server, localhost:3000 (got ${url}).`);
  if (/\$/.test(JSON.stringify(headers))) throw new Error(`${at}: a header with a shell variable cannot be run.`);
  return { method: method ?? (body === undefined ? 'GET' : 'POST'), path: match[1] ?? '/', headers, body };
}

/** Words of one shell command, quotes resolved; stops at a pipe, a redirection, `;`, `&` or a comment. */
export function shellWords(command: string): string[] {
  const words: string[] = [];
  let i = 0;
  while (i < command.length) {
    while (command[i] === ' ' || command[i] === '\t') i++;
    if (i >= command.length || '|>;&#'.includes(command[i]!)) break;
    let word = '';
    while (i < command.length && command[i] !== ' ' && command[i] !== '\t') {
      const c = command[i]!;
      if (c === "'") {
        const end = command.indexOf("'", i + 1);
        if (end < 0) throw new Error(`An unclosed ' in: ${command}`);
        word += command.slice(i + 1, end);
        i = end + 1;
      } else if (c === '"') {
        i++;
        while (i < command.length && command[i] !== '"') {
          if (command[i] === '\\' && i + 1 < command.length) i++;
          word += command[i++];
        }
        if (i >= command.length) throw new Error(`An unclosed " in: ${command}`);
        i++;
      } else if ('|>;&'.includes(c)) break;
      else word += command[i++];
    }
    words.push(word);
  }
  return words;
}
