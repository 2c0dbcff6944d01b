/**
 * MCP (Model Context Protocol) servers as tool sources: the shapes the rest of the project sees.
 * The connections themselves (stdio and streamable HTTP through @modelcontextprotocol/sdk,
 * reconnecting, restarting a server process that died) live in `./servers.ts`; the reference agent
 * offers their tools as `<server>__<tool>` and runs their calls like any tool call (keyed, once).
 */

/** How to reach one MCP server. Configured on the server side only: an API caller names servers, never commands. */
export type McpServerConfig = (
  | {
      /** A program speaking MCP on stdio; restarted when it dies. */
      command: string;
      args?: string[];
      env?: Record<string, string>;
      cwd?: string;
    }
  | {
      /** A streamable HTTP endpoint, e.g. `http://127.0.0.1:3001/mcp`. */
      url: string;
      headers?: Record<string, string>;
      /** OAuth for a server that asks for it (a 401): this process's own credentials (see `McpOAuthConfig`). */
      oauth?: McpOAuthConfig;
    }
) & {
  /**
   * Tools marked `destructiveHint: true` wait for a person's `tool.approve` unless this is `false`.
   * Default `true`.
   */
  approveDestructive?: boolean;
  /** Per call, in ms (default: the agent's tool timeout). */
  timeoutMs?: number;
  /**
   * At most this many calls of the server's tools at once, for all agents together (on Postgres,
   * of all processes together), as a code or HTTP tool's `concurrency` (core/tool-limits.ts): a
   * fleet cannot flood the server. A call waiting for room is not failing (the agent's view says
   * `waiting: "tool_capacity"`).
   */
  concurrency?: number;
};

/**
 * OAuth 2.1's client credentials grant (machine to machine: no person, no browser, which an agent
 * runtime has neither of): when the server answers 401, the client finds its authorization server
 * (the server's protected resource metadata), asks it for a token with this id and secret
 * (`client_secret_basic`), and sends the token from then on, asking again when it is refused.
 * Tokens are kept in memory: a restarted process asks for a new one.
 */
export interface McpOAuthConfig {
  clientId: string;
  clientSecret: string;
  /**
   * The authorization server these credentials were issued by: they are presented to it only, and
   * a server that names another one fails to connect (a server cannot collect them).
   */
  issuer: string;
  /** Scopes to ask for, space-separated. */
  scope?: string;
}

/** One tool as a server lists it, with the name the model sees. */
export interface McpToolInfo {
  /** The server's name in the config. */
  server: string;
  /** The tool's name on that server. */
  tool: string;
  /** `<server>__<tool>`: what the model calls. */
  name: string;
  description: string | null;
  /** The tool's `inputSchema` (a JSON Schema object). */
  parameters: Record<string, unknown>;
  /** Needs a person's approval (its `destructiveHint`, unless the server's config says otherwise). */
  approval: boolean;
}

/** What a call gave, as the model can read it. */
export interface McpCallOutcome {
  /** `false` when the server answered with `isError: true`: the model is told, it is not a failure of the step. */
  ok: boolean;
  /** Text for the tool message: text parts joined; other parts (images, resources) described or kept as JSON. */
  content: string;
}

/** The configured servers, connected lazily and kept connected. */
export interface McpServers {
  /** Configured server names. */
  readonly names: readonly string[];
  /** The tools of these servers (connecting when needed). A server that cannot be reached: a transient StepError. */
  listTools(servers: readonly string[], signal?: AbortSignal): Promise<McpToolInfo[]>;
  /**
   * Calls `tool` on `server` with `idempotencyKey` in the request's `_meta` as
   * `"durable-agents/idempotency-key"`. A server that cannot be reached or dies mid-call: a
   * transient StepError (the chart retries it with the same key).
   */
  callTool(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    options: { idempotencyKey: string; signal: AbortSignal; timeoutMs?: number },
  ): Promise<McpCallOutcome>;
  /** The calls of `server`'s tools that may run at once in this process (its config's `concurrency`); undefined: no limit. */
  concurrency?(server: string): number | undefined;
  /** Closes every connection and stops every server process started. */
  close(): Promise<void>;
}

/** The name the model sees for `tool` of `server`. */
export function mcpToolName(server: string, tool: string): string {
  return `${server}__${tool}`;
}

/** A server's name: what `input.mcp` and `--mcp NAME=…` use; no `__`, so `<server>__<tool>` splits one way. */
export const MCP_SERVER_NAME = /^(?!.*__)[A-Za-z0-9_-]{1,32}$/;
