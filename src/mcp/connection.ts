/**
 * One MCP server's connection, shared by every agent that uses the server: opened at first use,
 * opened again when a request finds it closed (a stdio server whose process died is started again
 * then), its tool list cached until the server says it changed (`notifications/tools/list_changed`)
 * or the connection is replaced.
 */
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { StepError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { classifyFailure } from './failures.js';
import { toCallOutcome } from './results.js';
import type { McpCallOutcome, McpServerConfig } from './types.js';

/** The `_meta` field that carries a call's idempotency key. */
export const IDEMPOTENCY_KEY_META = 'durable-agents/idempotency-key';

const CLIENT_INFO = { name: 'durable-agents', version: '1' };
/** How long opening a connection (starting a process, `initialize`) may take. */
const CONNECT_TIMEOUT_MS = 30_000;
/** A server listing more pages of tools than this is cut there. */
const MAX_TOOL_PAGES = 50;

interface Session {
  client: Client;
  transport: StdioClientTransport | StreamableHTTPClientTransport;
}

export class McpConnection {
  private session: Promise<Session> | undefined;
  private live: Session | undefined;
  private tools: Promise<Tool[]> | undefined;
  private closed = false;
  /** How many connections were opened: more than one means a reconnection (a restarted process). */
  connections = 0;

  /** OAuth's client credentials (one per server: the token it got outlives a reconnection). */
  private readonly authProvider: ClientCredentialsProvider | undefined;

  constructor(
    readonly name: string,
    private readonly config: McpServerConfig,
    private readonly logger: Logger,
  ) {
    const oauth = 'url' in config ? config.oauth : undefined;
    this.authProvider =
      oauth &&
      new ClientCredentialsProvider({
        clientId: oauth.clientId,
        clientSecret: oauth.clientSecret,
        expectedIssuer: oauth.issuer,
        clientName: 'durable-agents',
        ...(oauth.scope === undefined ? {} : { scope: oauth.scope }),
      });
  }

  /** The stdio server's process id while it runs (null for an HTTP server, or none running). */
  get pid(): number | null {
    return this.live?.transport instanceof StdioClientTransport ? this.live.transport.pid : null;
  }

  async listTools(signal?: AbortSignal): Promise<Tool[]> {
    if (!this.tools) {
      const list = this.attempt('list', undefined, fetchTools).catch((err: unknown) => {
        if (this.tools === list) this.tools = undefined;
        throw err;
      });
      this.tools = list;
    }
    return untilAborted(this.tools, signal);
  }

  async callTool(tool: string, args: Record<string, unknown>, options: { idempotencyKey: string; signal: AbortSignal; timeoutMs: number }): Promise<McpCallOutcome> {
    const offered = await this.listTools(options.signal);
    if (!offered.some((t) => t.name === tool)) {
      return { ok: false, content: JSON.stringify({ error: `The MCP server "${this.name}" no longer offers the tool "${tool}".` }) };
    }
    try {
      const result = await this.attempt('call', options.signal, (client) =>
        client.callTool({ name: tool, arguments: args, _meta: { [IDEMPOTENCY_KEY_META]: options.idempotencyKey } }, undefined, { signal: options.signal, timeout: options.timeoutMs }),
      );
      return toCallOutcome(result);
    } catch (err) {
      if (err instanceof ServerAnswer) return { ok: false, content: JSON.stringify({ error: err.message }) };
      throw err;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const session = await this.session?.catch(() => undefined);
    this.drop();
    await session?.client.close().catch(() => undefined);
  }

  /** The open connection, or a new one (shared by the requests that come while it opens). */
  private connect(signal?: AbortSignal): Promise<Session> {
    if (this.closed) return Promise.reject(new StepError('transient', 'mcp_unreachable', `The MCP server "${this.name}" is closed (the process is shutting down).`));
    if (!this.session) {
      const opening = this.open().catch((err: unknown) => {
        if (this.session === opening) this.session = undefined;
        const failure = classifyFailure(this.name, err);
        throw failure.kind === 'step' ? failure.error : new StepError('transient', 'mcp_unreachable', `The MCP server "${this.name}" could not be reached: ${failure.message}`);
      });
      this.session = opening;
    }
    return untilAborted(this.session, signal);
  }

  private async open(): Promise<Session> {
    const transport =
      'command' in this.config
        ? new StdioClientTransport({ command: this.config.command, args: this.config.args ?? [], env: this.config.env, cwd: this.config.cwd, stderr: 'pipe' })
        : new StreamableHTTPClientTransport(new URL(this.config.url), {
            requestInit: { headers: this.config.headers ?? {} },
            ...(this.authProvider ? { authProvider: this.authProvider } : {}),
          });
    // A server's stderr is its log: read (a pipe nobody reads would stop the server once full), at debug.
    if (transport instanceof StdioClientTransport) transport.stderr?.on('data', (chunk: Buffer) => this.logger.debug({ mcpServer: this.name, stderr: chunk.toString('utf8').trimEnd() }, 'MCP server stderr'));
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const session: Session = { client, transport };
    client.onclose = () => {
      if (this.live !== session) return;
      this.drop();
      if (!this.closed) this.logger.warn({ mcpServer: this.name }, 'MCP server connection closed: it is opened again (a stdio server started again) at its next use');
    };
    client.onerror = (err) => this.logger.debug({ mcpServer: this.name, err }, 'MCP transport error');
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (this.live === session) this.tools = undefined;
    });
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
    } catch (err) {
      await client.close().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await client.close().catch(() => undefined);
      throw new StepError('transient', 'mcp_unreachable', `The MCP server "${this.name}" is closed (the process is shutting down).`);
    }
    this.live = session;
    this.connections++;
    this.logger.info({ mcpServer: this.name, pid: this.pid ?? undefined, reconnection: this.connections > 1 }, this.connections > 1 ? 'MCP server reconnected' : 'MCP server connected');
    return session;
  }

  /**
   * `request` on the connection (opened if need be). A session the server no longer knows (it
   * restarted: HTTP 404, or the 400 some servers answer) is replaced and the request sent once more:
   * the server refused it unread. Throws a StepError, or, for a call, the server's refusal as a
   * `ServerAnswer` for the model.
   */
  private async attempt<T>(what: 'list' | 'call', signal: AbortSignal | undefined, request: (client: Client) => Promise<T>): Promise<T> {
    let session = await this.connect(signal);
    for (let retried = false; ; retried = true) {
      try {
        return await request(session.client);
      } catch (err) {
        if (!retried && sessionLost(session, err)) {
          this.logger.info({ mcpServer: this.name }, 'MCP server no longer knows the session (it restarted?): opening a new one');
          this.discard(session);
          session = await this.connect(signal);
          continue;
        }
        const failure = classifyFailure(this.name, err);
        if (failure.kind === 'answer') {
          if (what === 'call') throw new ServerAnswer(failure.message);
          throw new StepError('transient', 'mcp_unreachable', `The MCP server "${this.name}" did not list its tools: ${failure.message}`);
        }
        if (failure.drop) this.discard(session);
        throw failure.error;
      }
    }
  }

  /** Stops using `session` (if it is still the connection): the next request opens another. */
  private discard(session: Session): void {
    if (this.live !== session) return;
    this.drop();
    void session.client.close().catch(() => undefined);
  }

  private drop(): void {
    this.live = undefined;
    this.session = undefined;
    this.tools = undefined;
  }
}

/** What the server answered a call with instead of a result (a JSON-RPC error): the model is told. */
class ServerAnswer extends Error {}

/** A streamable HTTP session the server does not know (any more). */
function sessionLost(session: Session, err: unknown): boolean {
  if (!(session.transport instanceof StreamableHTTPClientTransport) || session.transport.sessionId === undefined) return false;
  return err instanceof StreamableHTTPError && (err.code === 404 || err.code === 400);
}

async function fetchTools(client: Client): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    const result = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...result.tools);
    cursor = result.nextCursor;
    if (!cursor) break;
  }
  return tools;
}

/** `promise`, or the signal's reason once it aborts (the shared promise goes on for the others). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err as Error);
      },
    );
  });
}
