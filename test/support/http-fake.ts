// The plumbing every fake HTTP server of the tests shares (the OpenAI fake, the webhook sink): a
// node:http server on 127.0.0.1 at a free port, bodies read whole, JSON answers, a close that
// does not wait for requests the fake holds back on purpose.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HttpFake {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  /** Requests received so far, whatever their route or outcome. */
  readonly requests: number;
  /** Drops open connections (held answers, keep-alive sockets) and stops listening; safe to call again. */
  close(): Promise<void>;
}

/** Answers one request; a handler that works asynchronously catches its own failures. */
export type FakeHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface HttpFakeOptions {
  /** Runs once, as close() begins: the moment for a fake to drop its timers and mark what it cut off. */
  onClose?: () => void;
}

/** Starts `handle` on 127.0.0.1, port 0. */
export async function startHttpFake(handle: FakeHandler, options: HttpFakeOptions = {}): Promise<HttpFake> {
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    // Idempotent: tests often close explicitly and again in afterEach.
    close: () =>
      (closing ??= new Promise<void>((resolve, reject) => {
        options.onClose?.();
        server.close((err) => (err ? reject(err) : resolve()));
        // Held requests and keep-alive sockets (fetch keeps them) would otherwise keep close() pending forever.
        server.closeAllConnections();
      })),
  };
}

/** The whole request body as text. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * The request body as text and parsed. `json` is undefined when the text is not JSON (no JSON text
 * parses to undefined), so a fake can tell "not JSON" from any JSON value, `null` included.
 */
export async function readJsonBody(req: IncomingMessage): Promise<{ raw: string; json: unknown }> {
  const raw = await readBody(req);
  try {
    return { raw, json: JSON.parse(raw) as unknown };
  } catch {
    return { raw, json: undefined };
  }
}

/** Answers with a JSON body, unless the client has already hung up (writing then would throw EPIPE noise). */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.destroyed || res.writableEnded) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}
