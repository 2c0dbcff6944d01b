import type { FC } from 'hono/jsx';
import type { ActionRecord, AgentRecord, CheckpointSummary } from '../../store/store.js';
import type { AgentView } from '../../runtime/views.js';
import { shorten } from '../../core/errors.js';
import { age, asText, clock, pick, pretty } from './format.js';
import { Layout, StateName, StatusBadge } from './layout.js';
import { stateText } from '../../core/state-value.js';
import type { ActorKind } from '../../durable/definition.js';
import { readAction } from '../../observability/action-outcome.js';
import { transitionLabel, type ChartDiagram } from './statechart.js';
import { Statechart } from './statechart-svg.js';

/** A field an event form asks for: strings as text, anything else as JSON. */
export interface EventField {
  name: string;
  kind: 'text' | 'json';
  required: boolean;
}

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

const EventForm: FC<{ type: string; fields: EventField[]; accepted: boolean }> = ({ type, fields, accepted }) => (
  <form data-event={type} hidden={!accepted} class={fields.length ? 'with-fields' : undefined}>
    <button type="submit">{type}</button>
    {fields.map((f) => (
      <input
        type="text"
        name={f.name}
        required={f.required}
        aria-label={`${type} ${f.name}`}
        placeholder={f.kind === 'json' ? `${f.name} (JSON)` : f.name}
        data-kind={f.kind}
      />
    ))}
  </form>
);

export const AgentPage: FC<AgentPageProps> = (props) => {
  const { view, record, diagram, events, accepted, checkpoints, actions, auth, now } = props;
  const lastError = pick(view.context, 'lastError');
  // The caller reads only the newest MAX_…_SHOWN of each, oldest first; the page shows newest first.
  const shownCheckpoints = [...checkpoints].reverse();
  const totalCheckpoints = record.lastSeq; // seqs run 1…lastSeq
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
              <span>{totalCheckpoints}</span>
            </div>
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
        <div class="events" id="events" data-accepted={accepted.join(' ')} style="margin-top: 14px">
          <h2>
            Send an event <span class="muted small">(the ones the current state takes)</span>
          </h2>
          <div class="forms">
            {/* Plain buttons first, then the events that ask for fields. */}
            {[...events]
              .sort((a, b) => Math.sign(a.fields.length) - Math.sign(b.fields.length))
              .map((e) => (
                <EventForm type={e.type} fields={e.fields} accepted={accepted.includes(e.type)} />
              ))}
          </div>
          <p class="muted small" id="no-events" hidden={accepted.length > 0}>
            {view.status === 'active' ? 'The current state takes no event.' : `The agent is ${view.status}: it takes no more events.`}
          </p>
        </div>
      </div>

      <div class="grid">
        <div class="card">
          <h2>Statechart</h2>
          {diagram ? (
            <div class="chart-wrap">
              <Statechart diagram={diagram} state={view.state} />
            </div>
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

        <div class="card">
          <h2>
            Checkpoints <span class="muted small">(newest first; pick one to see it, and fork from it)</span>
          </h2>
          <div class="timeline" id="checkpoints" data-live="checkpoints">
            {shownCheckpoints.map((cp) => (
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
            {totalCheckpoints > shownCheckpoints.length ? (
              <p class="small muted" style="padding: 6px 10px">
                {totalCheckpoints - shownCheckpoints.length} older checkpoints are not shown (GET /agents/{view.id}/checkpoints lists them all).
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
