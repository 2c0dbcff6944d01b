import type { FC } from 'hono/jsx';
import type { AgentView } from '../../runtime/views.js';
import { agentHref } from './format.js';

/** An agent that spawned many (one child per "agent as tool" call) lists the newest ones. */
export const MAX_CHILDREN_SHOWN = 200;

/**
 * The agent's parent and the agents it spawned, each a link to its page (replaced live by the
 * script after each snapshot). `data-parent` and `data-children` (how many in all) let the script
 * tell a redrawn section that lost them, from a view that does not carry them, and keep this one:
 * a parent never changes and children are never taken away.
 */
export const AgentFamily: FC<{ view: AgentView }> = ({ view }) => {
  const children = view.children ?? [];
  if (!view.parent && !children.length) return null;
  const shown = children.slice(-MAX_CHILDREN_SHOWN);
  return (
    <div class="family" data-parent={view.parent ?? ''} data-children={children.length}>
      {view.parent ? (
        <div id="parent">
          <span class="muted">Parent:</span>{' '}
          <a href={agentHref(view.parent)} class="mono">
            {view.parent}
          </a>
        </div>
      ) : null}
      {children.length ? (
        <div>
          <span class="muted">
            Children ({children.length}
            {children.length > shown.length ? `, the newest ${shown.length} shown` : ''}, oldest first):
          </span>
          <ul id="children">
            {shown.map((id) => (
              <li data-child={id}>
                <a href={agentHref(id)} class="mono">
                  {id}
                </a>
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </div>
  );
};
