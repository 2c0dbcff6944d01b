/**
 * What a failure of an MCP request means for the call: a transient failure of the step (the chart
 * retries it with the same key), a permanent one (the server refuses us: a person must look), or an
 * answer the model is told (the server understood the request and refused it).
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { isTransientStatus } from '../core/backoff.js';
import { StepError } from '../core/errors.js';

export type McpFailure =
  /** `drop`: the connection is unusable; the next request opens a new one (restarting a stdio server). */
  | { kind: 'step'; error: StepError; drop: boolean }
  | { kind: 'answer'; message: string };

export function classifyFailure(server: string, err: unknown): McpFailure {
  if (err instanceof StepError) return { kind: 'step', error: err, drop: false };
  const message = err instanceof Error ? err.message : String(err);
  const transient = (code: string, drop: boolean, status?: number): McpFailure => ({
    kind: 'step',
    drop,
    error: new StepError('transient', code, `The MCP server "${server}" ${code === 'tool_timeout' ? 'did not answer in time' : 'could not be reached'}: ${message}`, {
      cause: err,
      ...(status === undefined ? {} : { status }),
    }),
  });
  const refused = (status?: number): McpFailure => ({
    kind: 'step',
    drop: true,
    error: new StepError('permanent', 'mcp_refused', `The MCP server "${server}" refused the connection: ${message}`, {
      cause: err,
      ...(status === undefined ? {} : { status }),
    }),
  });
  const unauthorized = (): McpFailure => ({
    kind: 'step',
    drop: true,
    error: new StepError('permanent', 'mcp_unauthorized', `The MCP server "${server}" could not be authorized (its config's oauth): ${message}`, { cause: err }),
  });
  if (err instanceof McpError) {
    if (err.code === ErrorCode.ConnectionClosed) return transient('mcp_unreachable', true);
    if (err.code === ErrorCode.RequestTimeout) return transient('tool_timeout', false);
    return { kind: 'answer', message: `The MCP server answered with an error: ${message}` };
  }
  if (err instanceof UnauthorizedError) return refused(401);
  if (err instanceof OAuthError) {
    // The authorization server is busy or down: asking again later may work. Anything else (a wrong
    // secret, a scope refused…) is the config's to mend, not a wait's.
    if (OAUTH_TRANSIENT.has(err.errorCode)) return transient('mcp_unreachable', true);
    return unauthorized();
  }
  // The server sent us to an authorization server other than the configured issuer (the SDK's words).
  if (err instanceof Error && /is bound to authorization server/.test(err.message)) return unauthorized();
  if (err instanceof StreamableHTTPError) {
    const status = err.code ?? -1;
    // 404: the server no longer knows our session (it restarted): a new connection starts another.
    if (status === 404 || isTransientStatus(status)) return transient('mcp_unreachable', true, status);
    return refused(status > 0 ? status : undefined);
  }
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return transient('tool_timeout', false);
  // Network errors, a process that could not start, a pipe that broke: the connection is gone.
  return transient('mcp_unreachable', true);
}

/** OAuth error codes that say "later", not "no". */
const OAUTH_TRANSIENT = new Set(['server_error', 'temporarily_unavailable', 'too_many_requests']);
