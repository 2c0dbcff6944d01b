import type { FC } from 'hono/jsx';
import type { ActionRecord, AgentRecord, CheckpointSummary } from '../../store/store.js';
import type { AgentView } from '../../runtime/views.js';
import { shorten } from '../../core/errors.js';
import { asText, clock, pick } from './format.js';
import { Layout } from './layout.js';
import type { ActorKind } from '../../durable/definition.js';
import { readAction } from '../../observability/action-outcome.js';
import type { ChartDiagram } from './statechart.js';
import { AgentChart } from './agent-chart.js';
import { AgentSummary } from './agent-summary.js';
import { CheckpointTimeline } from './checkpoint-timeline.js';
import { EventForms, type EventField } from './event-forms.js';

export interface AgentPageProps {
  view: AgentView;
  record: AgentRecord;
  diagram: ChartDiagram | undefined;
  /** Every event type of the machine, with its form fields. */
  events: { type: string; fields: EventField[] }[];
  /** The types the current state takes now. */
  accepted: string[];
  checkpoints: CheckpointSummary[];
  actions: ActionRecord[];
  /** What the machine declares an action's actor to be (by src). */
  kindOf: (src: string) => ActorKind;
  auth: boolean;
  now: number;
}

/** Long agents have long histories: the page shows the newest ones. */
export const MAX_CHECKPOINTS_SHOWN = 300;
export const MAX_ACTIONS_SHOWN = 200;

const Text: FC<{ value: string | undefined; max?: number }> = ({ value, max = 280 }) => {
  if (value === undefined || value === '') return <span class="muted">—</span>;
  if (value.length <= max) return <div class="text">{value}</div>;
  return (
    <details>
      <summary class="text">{shorten(value, max)}</summary>
      <div class="text">{value}</div>
    </details>
  );
};

const ErrorText: FC<{ error: unknown }> = ({ error }) => {
  const message = asText(pick(error, 'message')) ?? asText(error) ?? 'failed';
  const details = [pick(error, 'kind'), pick(error, 'code'), pick(error, 'status')].filter((v) => v !== undefined && v !== null);
  return (
    <div class="fail text">
      {message}
      {details.length ? <span class="small"> ({details.join(', ')})</span> : null}
    </div>
  );
};

/** One action-log row: LLM calls show prompt and answer, effects their key and result, others their JSON. */
const ActionRow: FC<{ action: ActionRecord; kind: ActorKind }> = ({ action, kind }) => {
  const { outcome, ms, attempt, input, output } = readAction(action);
  const ok = outcome === 'ok';
  const error = pick(action.result, 'error');
  let what;
  let result;
  if (kind === 'llm') {
    const system = asText(pick(input, 'system'));
    const task = asText(pick(input, 'task'));
    what = (
      <>
        <div class="small muted">model {asText(pick(input, 'model')) ?? '?'}</div>
        {system ? <Text value={`system: ${system}`} /> : null}
        <Text value={task} />
      </>
    );
    result = ok ? <Text value={asText(output)} /> : <ErrorText error={error} />;
  } else if (kind === 'effect') {
    const key = asText(pick(output, 'idempotencyKey'));
    const webhook = asText(pick(input, 'webhook'));
    what = (
      <>
        <div class="small muted">{webhook ? `POST ${webhook}` : 'no webhook'}</div>
        <Text value={asText(pick(input, 'task'))} max={120} />
      </>
    );
    result = ok ? (
      <div class="text">
        <span class="ok">{pick(output, 'delivered') === true ? `delivered (HTTP ${String(pick(output, 'status'))})` : 'done (nothing to deliver)'}</span>
        {key ? (
          <div class="small">
            key <code>{key}</code>
          </div>
        ) : null}
      </div>
    ) : (
      <ErrorText error={error} />
    );
  } else {
    what = <Text value={asText(pick(action.payload, 'input') ?? action.payload)} />;
    result = ok ? <Text value={asText(output)} /> : <ErrorText error={error ?? action.result} />;
  }
  return (
    <tr data-action={action.action}>
      <td class="mono">{action.seq}</td>
      <td>
        <span class={ok ? 'ok' : 'fail'}>{ok ? '✓' : '✗'}</span> {action.action}
      </td>
      <td>{attempt ?? '—'}</td>
      <td>{what}</td>
      <td>{result}</td>
      <td class="mono">{ms === undefined ? '—' : `${ms} ms`}</td>
      <td class="small muted" title={clock(action.createdAt)}>
        {clock(action.createdAt).slice(11)}
      </td>
    </tr>
  );
};

export const AgentPage: FC<AgentPageProps> = (props) => {
  const { view, record, diagram, events, accepted, checkpoints, actions, auth, now } = props;
  // The caller reads only the newest MAX_ACTIONS_SHOWN, oldest first; the log shows newest first.
  const shownActions = [...actions].reverse();
  return (
    <Layout
      title={view.id}
      page="agent"
      auth={auth}
      attrs={{ 'data-agent-id': view.id, 'data-status': view.status, 'data-state': JSON.stringify(view.state) }}
    >
      <div class="card">
        <div class="row" style="justify-content: space-between">
          <h1>
            <span class="mono" id="agent-id">
              {view.id}
            </span>{' '}
            <span class="muted small">{view.machine}</span>
          </h1>
          {view.status === 'active' ? (
            <button type="button" class="danger" id="stop">
              Stop agent
            </button>
          ) : null}
        </div>
        <AgentSummary view={view} record={record} now={now} />
        <EventForms events={events} accepted={accepted} status={view.status} />
      </div>

      <div class="grid">
        <AgentChart view={view} diagram={diagram} />
        <CheckpointTimeline agentId={view.id} checkpoints={checkpoints} total={record.lastSeq} />
      </div>

      <div class="card">
        <h2>
          Action log <span class="muted small">(LLM calls and effects, newest first)</span>
        </h2>
        <table class="actions">
          <thead>
            <tr>
              <th>Checkpoint</th>
              <th>Action</th>
              <th>Attempt</th>
              <th>Input</th>
              <th>Result</th>
              <th>Latency</th>
              <th>At (UTC)</th>
            </tr>
          </thead>
          <tbody id="actions" data-live="actions">
            {shownActions.length ? (
              shownActions.map((a) => <ActionRow action={a} kind={props.kindOf(a.action)} />)
            ) : (
              <tr>
                <td colspan={7} class="muted">
                  No actions yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </Layout>
  );
};
