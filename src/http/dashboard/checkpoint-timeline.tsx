import type { FC } from 'hono/jsx';
import type { CheckpointSummary } from '../../store/store.js';
import { stateText } from '../../core/state-value.js';
import { clock } from './format.js';
import { transitionLabel } from './statechart.js';

export interface CheckpointTimelineProps {
  agentId: string;
  /** The newest checkpoints, oldest first (as the runtime lists them). */
  checkpoints: CheckpointSummary[];
  /** How many the agent has in all: seqs run 1…total. */
  total: number;
}

/** The checkpoints, newest first; picking one shows it (the script fetches it) and offers a fork from it. */
export const CheckpointTimeline: FC<CheckpointTimelineProps> = ({ agentId, checkpoints, total }) => {
  const shown = [...checkpoints].reverse();
  return (
    <div class="card">
      <h2>
        Checkpoints <span class="muted small">(newest first; pick one to see it, and fork from it)</span>
      </h2>
      <div class="timeline" id="checkpoints" data-live="checkpoints">
        {shown.map((cp) => (
          <button type="button" data-seq={cp.seq}>
            <span class="mono">#{cp.seq}</span>
            <span>
              <span class="state-name">{stateText(cp.state)}</span>{' '}
              <span class="ev">{cp.seq === 1 && cp.eventType === 'xstate.init' ? 'start' : transitionLabel(cp.eventType, undefined)}</span>
            </span>
            <span class="small muted" title={clock(cp.createdAt)}>
              {clock(cp.createdAt).slice(11, 19)} · {cp.progress}
            </span>
          </button>
        ))}
        {total > shown.length ? (
          <p class="small muted" style="padding: 6px 10px">
            {total - shown.length} older checkpoints are not shown (GET /agents/{agentId}/checkpoints lists them all).
          </p>
        ) : null}
      </div>
      <div id="checkpoint-detail" hidden>
        <div class="row" style="justify-content: space-between; margin-top: 12px">
          <strong id="checkpoint-title"></strong>
          <button type="button" id="fork">
            Fork from this checkpoint
          </button>
        </div>
        <div class="small muted" id="checkpoint-meta"></div>
        <pre id="checkpoint-context"></pre>
      </div>
    </div>
  );
};
