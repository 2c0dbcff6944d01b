import type { FC } from 'hono/jsx';
import type { ExchangeView, MessageView, TaskView } from './exchange.js';
import { argumentsText, Text, tokensText } from './text.js';
import { ToolName } from './tool-name.js';

/** One message of the exchange, with its role; an answer's tool calls, a tool message's call and outcome. */
const Message: FC<{ message: MessageView }> = ({ message }) => {
  if (message.role === 'assistant') {
    return (
      <li class="message assistant" data-role="assistant">
        <span class="role">assistant</span>
        {message.content ? <Text value={message.content} /> : null}
        {message.toolCalls.map((call) => (
          <div class="tool-call" data-call={call.id}>
            calls <ToolName name={call.name} mcp={call.mcp} /> <span class="small muted">({call.id})</span>
            <Text value={argumentsText(call.arguments)} max={200} />
            {call.key ? (
              <div class="small">
                key <code>{call.key}</code>
              </div>
            ) : null}
          </div>
        ))}
      </li>
    );
  }
  if (message.role === 'tool') {
    const status = message.ok === undefined ? <span class="muted">result</span> : message.ok ? <span class="ok">ok</span> : <span class="fail">error</span>;
    return (
      <li class="message tool" data-role="tool" data-call={message.callId}>
        <span class="role">tool</span> {status} <ToolName name={message.name} mcp={message.mcp} /> <span class="small muted">({message.callId})</span>
        {message.key ? (
          <div class="small">
            key <code>{message.key}</code>
          </div>
        ) : null}
        <Text value={message.content} />
      </li>
    );
  }
  return (
    <li class={`message ${message.role}`} data-role={message.role}>
      <span class="role">{message.role}</span>
      <Text value={message.content} />
    </li>
  );
};

const Task: FC<{ task: TaskView }> = ({ task }) => (
  <div class="task" data-task={task.seq} data-current={task.current ? 'true' : undefined}>
    <h3>
      Task {task.seq === undefined ? '' : `#${task.seq}`} {task.current ? <span class="badge active">in progress</span> : <span class="badge done">done</span>}{' '}
      <span class="small muted">
        {task.turns === undefined ? '' : `${task.turns} turn${task.turns === 1 ? '' : 's'}`}
        {task.usage ? ` · ${tokensText(task.usage)}` : ''}
      </span>
    </h3>
    {task.messages ? (
      <ol class="messages">
        {task.messages.map((m) => (
          <Message message={m} />
        ))}
      </ol>
    ) : (
      <>
        <Text value={task.task} />
        <p class="small muted">Its exchange is no longer in the shown action log.</p>
      </>
    )}
    {task.response !== undefined ? (
      <div class="response">
        <span class="role">response</span>
        <Text value={task.response} />
      </div>
    ) : null}
  </div>
);

/** The agent's exchange, task by task (oldest first), and what its LLM calls cost. */
export const Conversation: FC<{ exchange: ExchangeView }> = ({ exchange }) => (
  <div class="card" id="conversation">
    <h2>
      Conversation{' '}
      <span class="muted small" id="usage">
        {exchange.usage ? `(all tasks: ${tokensText(exchange.usage)})` : ''}
      </span>
    </h2>
    {exchange.hiddenTasks ? (
      <p class="small muted">
        {exchange.hiddenTasks} earlier task{exchange.hiddenTasks === 1 ? '' : 's'} not shown.
      </p>
    ) : null}
    {exchange.tasks.length ? (
      exchange.tasks.map((t) => <Task task={t} />)
    ) : (
      <p class="muted">No task yet.</p>
    )}
  </div>
);

/**
 * Where the page script writes the answer of the LLM call in flight as its tokens arrive (text
 * only, never HTML: it is model output). Not a live section: a redraw must not wipe it. Hidden
 * until a call streams, and again once its answer is committed (the conversation then shows it).
 */
export const LiveAnswer: FC = () => (
  <section class="card live-answer" id="live-answer" hidden>
    <h2>
      Live answer <span class="muted small" id="live-turn"></span> <span class="badge restarted" id="live-note"></span>
    </h2>
    <pre id="live-text"></pre>
  </section>
);
