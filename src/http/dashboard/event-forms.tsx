import type { FC } from 'hono/jsx';
import { isEventDescriptor } from '../../runtime/registered-machine.js';
import type { AgentStatus } from '../../store/store.js';

/** A field an event form asks for: strings as text, anything else as JSON. */
export interface EventField {
  name: string;
  kind: 'text' | 'json';
  required: boolean;
}

/**
 * One event type's form. For a wildcard descriptor (`'*'`, `'event.*'`) the person types the event's
 * type: the script sets every named input on the event, so the `type` input replaces the descriptor.
 */
const EventForm: FC<{ type: string; fields: EventField[]; accepted: boolean }> = ({ type, fields, accepted }) => (
  <form data-event={type} hidden={!accepted} class={fields.length || isEventDescriptor(type) ? 'with-fields' : undefined}>
    <button type="submit">{type}</button>
    {isEventDescriptor(type) && (
      <input type="text" name="type" required aria-label={`${type} type`} placeholder={`type (${type})`} data-kind="text" />
    )}
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

export interface EventFormsProps {
  /** Every event type of the machine, with its form fields. */
  events: { type: string; fields: EventField[] }[];
  /** The types the current state takes now: the only forms shown (the script shows others as the state changes). */
  accepted: string[];
  status: AgentStatus;
}

/** 1 for a form with inputs (fields, or the type of a descriptor's event), else 0. */
const asksFor = (e: { type: string; fields: EventField[] }) => (e.fields.length || isEventDescriptor(e.type) ? 1 : 0);

/** "Send an event": one form per event type of the machine, those the current state takes shown. */
export const EventForms: FC<EventFormsProps> = ({ events, accepted, status }) => (
  <div class="events" id="events" data-accepted={accepted.join(' ')} style="margin-top: 14px">
    <h2>
      Send an event <span class="muted small">(the ones the current state takes)</span>
    </h2>
    <div class="forms">
      {/* Plain buttons first, then the events that ask for fields. */}
      {[...events]
        .sort((a, b) => asksFor(a) - asksFor(b))
        .map((e) => (
          <EventForm type={e.type} fields={e.fields} accepted={accepted.includes(e.type)} />
        ))}
    </div>
    <p class="muted small" id="no-events" hidden={accepted.length > 0}>
      {status === 'active' ? 'The current state takes no event.' : `The agent is ${status}: it takes no more events.`}
    </p>
  </div>
);
