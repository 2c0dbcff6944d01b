import type { FC } from 'hono/jsx';
import type { ActionRecord, AgentRecord, CheckpointSummary } from '../../store/store.js';
import type { AgentView } from '../../runtime/views.js';
import { Layout } from './layout.js';
import type { ActorKind } from '../../durable/definition.js';
import type { ChartDiagram } from './statechart.js';
import { ActionRow } from './action-row.js';
import { Approvals } from './approvals.js';
import { Conversation, LiveAnswer } from './conversation.js';
import { readExchange } from './exchange.js';
import { AgentChart } from './agent-chart.js';
import { AgentFamily } from './agent-family.js';
import { AgentSummary } from './agent-summary.js';
import { CheckpointTimeline } from './checkpoint-timeline.js';
import { EventForms, type EventField } from './event-forms.js';

export interface AgentPageProps {
  /** The agent's own view (`runtime.view`): the one that carries its children. */
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
  readOnly?: boolean;
  now: number;
}

/** Long agents have long histories: the page shows the newest ones. */
export const MAX_CHECKPOINTS_SHOWN = 300;
export const MAX_ACTIONS_SHOWN = 200;

export const AgentPage: FC<AgentPageProps> = (props) => {
  const { view, record, diagram, events, accepted, checkpoints, actions, auth, readOnly, now } = props;
  // The caller reads only the newest MAX_ACTIONS_SHOWN, oldest first; the log shows newest first.
  const shownActions = [...actions].reverse();
  const exchange = readExchange(view.id, view.context, actions, props.kindOf);
  return (
    <Layout
      title={view.id}
      page="agent"
      auth={auth}
      readOnly={readOnly}
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
        {/* Always there, as the other live sections: a child spawned while the page is open shows up. */}
        <div data-live="family">
          <AgentFamily view={view} />
        </div>
        <EventForms events={events} accepted={accepted} status={view.status} />
      </div>

      {/* Always there, empty or not: the script refreshes only the live sections the page has. */}
      <div data-live="approvals">{exchange ? <Approvals pending={exchange.pending} /> : null}</div>

      <div class="grid">
        <AgentChart view={view} diagram={diagram} />
        <CheckpointTimeline agentId={view.id} checkpoints={checkpoints} total={record.lastSeq} />
      </div>

      <div data-live="conversation">{exchange ? <Conversation exchange={exchange} /> : null}</div>
      {view.status === 'active' ? <LiveAnswer /> : null}

      <div class="card">
        <h2>
          Action log <span class="muted small">(LLM calls, tool calls and effects, newest first)</span>
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
              shownActions.map((a) => <ActionRow agentId={view.id} action={a} kind={props.kindOf(a.action)} />)
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
