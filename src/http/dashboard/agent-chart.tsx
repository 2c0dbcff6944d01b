import type { FC } from 'hono/jsx';
import type { AgentView } from '../../runtime/views.js';
import { pretty } from './format.js';
import type { ChartDiagram } from './statechart.js';
import { Statechart } from './statechart-svg.js';

/** The diagram alone as an SVG document (the dashboard serves it), highlighted at the agent's state when it is fetched. */
export const chartSvgPath = (agentId: string) => `/ui/agents/${encodeURIComponent(agentId)}/chart.svg`;

/** The machine's statechart with the agent's state highlighted, and its context now. */
export const AgentChart: FC<{ view: AgentView; diagram: ChartDiagram | undefined }> = ({ view, diagram }) => (
  <div class="card">
    <h2>Statechart</h2>
    {diagram ? (
      <>
        {/* At its natural size: the box scrolls both ways rather than shrink the diagram's text. */}
        <div class="chart-wrap">
          <Statechart diagram={diagram} state={view.state} />
        </div>
        <p class="chart-links small">
          <a href={chartSvgPath(view.id)} target="_blank" rel="noopener">
            Open full size
          </a>{' '}
          <span class="muted">(the diagram alone, the state of now)</span>
        </p>
      </>
    ) : (
      <p class="muted">The machine "{view.machine}" is not registered in this process: no diagram.</p>
    )}
    {diagram?.internal.map((i) => (
      <p class="small muted">
        Taken without a change of state {i.state ? `in ${i.state}` : 'in every state'}: <code>{i.events.join(', ')}</code>
      </p>
    ))}
    <details data-live="context">
      <summary>Context now</summary>
      <pre id="context">{pretty(view.context)}</pre>
    </details>
  </div>
);
