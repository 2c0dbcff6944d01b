import { raw } from 'hono/html';
import type { FC } from 'hono/jsx';
import { activeStatePaths, type ChartDiagram, type ChartEdge, type ChartState } from './statechart.js';

const pathData = (points: ChartEdge['points']) => points.map((p, i) => `${i ? 'L' : 'M'}${round(p.x)} ${round(p.y)}`).join(' ');
const round = (n: number) => Math.round(n * 10) / 10;

const StateBox: FC<{ state: ChartState; active: boolean }> = ({ state, active }) => {
  const compound = state.kind === 'compound' || state.kind === 'parallel';
  return (
    <g class={`state ${state.kind}${active ? ' active' : ''}`} data-state={state.id}>
      <title>{state.id}</title>
      <rect x={round(state.x)} y={round(state.y)} width={round(state.width)} height={round(state.height)} rx="8" />
      {state.kind === 'final' ? (
        <rect class="inner" x={round(state.x + 4)} y={round(state.y + 4)} width={round(state.width - 8)} height={round(state.height - 8)} rx="5" />
      ) : null}
      {compound ? (
        <text class="title" x={round(state.x + 12)} y={round(state.y + 21)}>
          {state.name}
        </text>
      ) : (
        <text x={round(state.x + state.width / 2)} y={round(state.y + state.height / 2 + 4.5)} text-anchor="middle">
          {state.name}
        </text>
      )}
    </g>
  );
};

/**
 * The laid-out statechart as inline SVG, at its natural size (its width and height in pixels: the
 * page scrolls it rather than shrink its text). Every state is a `g.state[data-state=path]` and every
 * transition a `g.edge[data-from][data-to]`, so the client can move the highlight without a redraw.
 * `standalone`: an SVG document of its own (its namespace and its style inside), for `chart.svg`.
 */
export const Statechart: FC<{ diagram: ChartDiagram; state: unknown; standalone?: boolean }> = ({ diagram, state, standalone = false }) => {
  const active = new Set(activeStatePaths(state));
  // Parents first, so that children are drawn on top of their container.
  const states = [...diagram.states].sort((a, b) => a.depth - b.depth);
  return (
    <svg
      {...(standalone ? { xmlns: 'http://www.w3.org/2000/svg' } : {})}
      class="chart"
      viewBox={`0 0 ${Math.ceil(diagram.width)} ${Math.ceil(diagram.height)}`}
      width={Math.ceil(diagram.width)}
      height={Math.ceil(diagram.height)}
      role="img"
      aria-label="Statechart"
    >
      <defs>
        {standalone ? <style>{raw(STATECHART_CSS)}</style> : null}
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" />
        </marker>
      </defs>
      {states.map((s) => (
        <StateBox state={s} active={active.has(s.id)} />
      ))}
      {diagram.initials.map((dot) => (
        <circle class="initial" cx={round(dot.x)} cy={round(dot.y)} r="5" />
      ))}
      {diagram.edges.map((edge) => (
        <g class={`edge${edge.initial ? ' initial' : ''}${active.has(edge.from) ? ' next' : ''}`} data-from={edge.from} data-to={edge.to}>
          <path d={pathData(edge.points)} marker-end="url(#arrow)" />
          {edge.labelBox ? (
            <text x={round(edge.labelBox.x + 3)} y={round(edge.labelBox.y + edge.labelBox.height - 4)}>
              {edge.label}
            </text>
          ) : null}
        </g>
      ))}
    </svg>
  );
};

export const STATECHART_CSS = `
svg.chart { display: block; max-width: none; font: 13px system-ui, -apple-system, "Segoe UI", sans-serif; }
svg.chart .state rect { fill: #fff; stroke: #94a3b8; stroke-width: 1.5; }
svg.chart .state.compound > rect, svg.chart .state.parallel > rect { fill: #f8fafc; stroke-dasharray: none; }
svg.chart .state text { fill: #1e293b; }
svg.chart .state text.title { font-weight: 600; fill: #475569; }
svg.chart .state.final rect.inner { fill: none; }
svg.chart .state.active > rect { fill: #fef3c7; stroke: #d97706; stroke-width: 2.5; }
svg.chart .state.compound.active > rect { fill: #fffbeb; }
svg.chart .state.active > text { font-weight: 700; fill: #92400e; }
svg.chart .state.then > rect { stroke: #6366f1; stroke-width: 2.5; stroke-dasharray: 6 3; }
svg.chart .edge path { fill: none; stroke: #94a3b8; stroke-width: 1.4; }
svg.chart .edge.next path { stroke: #d97706; }
svg.chart .edge text { font-size: 11px; fill: #475569; paint-order: stroke; stroke: #fff; stroke-width: 4px; stroke-linejoin: round; }
svg.chart .edge.next text { fill: #92400e; }
svg.chart marker path, svg.chart circle.initial { fill: #64748b; }
`;
