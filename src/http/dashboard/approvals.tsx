import type { FC } from 'hono/jsx';
import { asText } from './format.js';
import type { PendingView } from './exchange.js';
import { Text } from './text.js';
import { ToolName } from './tool-name.js';

/**
 * The tool calls waiting for a person: each with its name and arguments, Approve and Reject
 * (with an optional reason). They are event forms like the others (`form[data-event]`): the page
 * script posts `tool.approve` / `tool.reject` with the call's id, and the section is replaced once
 * the decision is committed.
 */
export const Approvals: FC<{ pending: PendingView[] }> = ({ pending }) =>
  pending.length ? (
    <div class="card approvals" id="approvals">
      <h2>
        Waiting for approval <span class="muted small">(tool calls that run only once a person decides)</span>
      </h2>
      {pending.map((p) => (
        <div class="approval" data-approval={p.callId}>
          <div>
            <ToolName name={p.name} mcp={p.mcp} /> <span class="small muted">({p.callId})</span>
            {p.key ? (
              <span class="small">
                {' '}
                key <code>{p.key}</code>
              </span>
            ) : null}
          </div>
          <Text value={asText(p.arguments)} max={600} />
          <div class="row">
            <form data-event="tool.approve" class="decision">
              <input type="hidden" name="callId" value={p.callId} />
              <button type="submit" class="approve">
                Approve
              </button>
            </form>
            <form data-event="tool.reject" class="decision">
              <input type="hidden" name="callId" value={p.callId} />
              <input type="text" name="reason" aria-label={`reason for rejecting ${p.callId}`} placeholder="reason (optional)" />
              <button type="submit" class="danger reject">
                Reject
              </button>
            </form>
          </div>
        </div>
      ))}
    </div>
  ) : null;
