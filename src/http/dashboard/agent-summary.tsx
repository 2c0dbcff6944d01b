import type { FC } from 'hono/jsx';
import type { AgentRecord } from '../../store/store.js';
import type { AgentView } from '../../runtime/views.js';
import { age, asText, clock, pick } from './format.js';
import { StateName, StatusBadge } from './layout.js';

export interface AgentSummaryProps {
  view: AgentView;
  /** The stored row, for what a view does not carry: the agent's error and its checkpoint count. */
  record: AgentRecord;
  now: number;
}

/** Status, state, progress and times at a glance, and the errors that parked the agent (replaced live by the script). */
export const AgentSummary: FC<AgentSummaryProps> = ({ view, record, now }) => {
  const lastError = pick(view.context, 'lastError');
  const budget = budgetText(view.context);
  const checkpoints = record.lastSeq; // seqs run 1…lastSeq
  return (
    <div data-live="summary">
      <div class="summary">
        <div>
          <span>Status</span>
          <span id="status">
            <StatusBadge status={view.status} />
          </span>
        </div>
        <div>
          <span>State</span>
          <StateName value={view.state} id="state" />
        </div>
        <div>
          <span>Progress</span>
          <span id="progress">{view.progress}</span>
        </div>
        <div>
          <span>Age</span>
          <span title={clock(view.createdAt)}>{age(view.createdAt, now)}</span>
        </div>
        <div>
          <span>Updated</span>
          <span title={clock(view.updatedAt)}>{age(view.updatedAt, now)} ago</span>
        </div>
        <div>
          <span>Checkpoints</span>
          <span>{checkpoints}</span>
        </div>
        {budget ? (
          <div>
            <span>Budget</span>
            <span id="budget">{budget}</span>
          </div>
        ) : null}
      </div>
      {lastError && typeof lastError === 'object' ? (
        <div class="alert" id="last-error">
          <strong>Last error</strong> ({asText(pick(lastError, 'kind')) ?? 'error'} at {asText(pick(lastError, 'step')) ?? '?'},{' '}
          {String(pick(lastError, 'attempts') ?? '?')} attempt(s)): {asText(pick(lastError, 'message'))}
        </div>
      ) : null}
      {record.error ? (
        <div class="alert" id="agent-error">
          <strong>Agent error</strong>: {record.error.message}
        </div>
      ) : null}
    </div>
  );
};

/**
 * The reference agent's spending against its budget (`context.budget`, `context.spent`), e.g.
 * `1,204 of 5,000 tokens · $0.0031 of $0.50`; undefined for an agent without one.
 */
export function budgetText(context: unknown): string | undefined {
  const budget = pick(context, 'budget');
  const spent = pick(context, 'spent');
  if (!budget || typeof budget !== 'object' || !spent || typeof spent !== 'object') return undefined;
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const tokens = num(pick(spent, 'totalTokens')) ?? 0;
  const cost = num(pick(spent, 'costUsd'));
  const maxTokens = num(pick(budget, 'maxTotalTokens'));
  const maxCost = num(pick(budget, 'maxCostUsd'));
  // Cents, or millionths of a dollar below a cent (a call costs fractions of one).
  const usd = (v: number) => `$${v >= 0.01 ? v.toFixed(2) : v.toFixed(6).replace(/0{1,4}$/, '')}`;
  const parts = [`${tokens.toLocaleString('en-US')}${maxTokens === undefined ? '' : ` of ${maxTokens.toLocaleString('en-US')}`} tokens`];
  if (cost !== undefined) parts.push(`${usd(cost)}${maxCost === undefined ? '' : ` of ${usd(maxCost)}`}`);
  return parts.join(' · ');
}
