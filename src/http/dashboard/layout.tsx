import type { Child, FC } from 'hono/jsx';
import { raw } from 'hono/html';
import { stateText } from '../../core/state-value.js';
import { STATECHART_CSS } from './statechart-svg.js';

export const CLIENT_SCRIPT_PATH = '/ui/app.js';
export const LOGIN_PATH = '/ui/login';
export const LOGOUT_PATH = '/ui/logout';

const CSS = `
:root { color-scheme: light; --ink: #0f172a; --muted: #64748b; --line: #e2e8f0; --bg: #f1f5f9; --accent: #2563eb; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: var(--bg); }
header.top { display: flex; align-items: center; gap: 16px; padding: 10px 24px; background: #0f172a; color: #e2e8f0; }
header.top a { color: #e2e8f0; text-decoration: none; }
header.top .brand { font-weight: 700; letter-spacing: .02em; }
header.top .spacer { flex: 1; }
header.top form { margin: 0; }
header.top button { background: transparent; color: #cbd5e1; border: 1px solid #475569; }
main { max-width: 1400px; margin: 0 auto; padding: 20px 24px 48px; }
h1 { font-size: 20px; margin: 0 0 4px; }
h1 .mono { font-size: inherit; }
h2 { font-size: 15px; margin: 0 0 10px; }
a { color: var(--accent); }
.card { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 16px; margin-bottom: 16px; }
.muted { color: var(--muted); }
.small { font-size: 12px; }
.mono, code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: #f8fafc; border: 1px solid var(--line); border-radius: 6px; padding: 10px; overflow: auto; max-height: 420px; margin: 6px 0 0; white-space: pre-wrap; word-break: break-word; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 7px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); font-weight: 600; }
tr:last-child td { border-bottom: 0; }
input, select, textarea, button { font: inherit; }
input, select, textarea { border: 1px solid #cbd5e1; border-radius: 6px; padding: 6px 8px; background: #fff; }
button { border: 1px solid #1d4ed8; background: var(--accent); color: #fff; border-radius: 6px; padding: 6px 12px; cursor: pointer; }
button.secondary { background: #fff; color: var(--ink); border-color: #cbd5e1; }
button.danger { background: #fff; color: #b91c1c; border-color: #fca5a5; }
button:disabled { opacity: .55; cursor: default; }
.row { display: flex; gap: 10px; align-items: center; flex-wrap: wrap; }
.grid { display: grid; grid-template-columns: minmax(0, 1.25fr) minmax(0, 1fr); gap: 16px; align-items: start; }
@media (max-width: 1000px) { .grid { grid-template-columns: minmax(0, 1fr); } }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 600; border: 1px solid transparent; }
.badge.active { background: #dbeafe; color: #1e40af; }
.badge.done { background: #dcfce7; color: #166534; }
.badge.error { background: #fee2e2; color: #991b1b; }
.badge.stopped { background: #e2e8f0; color: #334155; }
.badge.failed { background: #fee2e2; color: #991b1b; }
.state-name { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; background: #f1f5f9; padding: 1px 6px; border-radius: 4px; }
.progress { display: inline-flex; align-items: center; gap: 6px; }
.family { margin-top: 10px; }
.family > div + div { margin-top: 4px; }
.family ul { list-style: none; margin: 4px 0 0; padding: 0; display: flex; flex-wrap: wrap; gap: 4px 14px; max-height: 160px; overflow: auto; }
.alert { border: 1px solid #fecaca; background: #fef2f2; color: #7f1d1d; border-radius: 8px; padding: 10px 12px; margin: 10px 0 0; }
#flash { position: fixed; right: 20px; bottom: 20px; max-width: 460px; z-index: 10; }
#flash div { background: #0f172a; color: #fff; padding: 10px 14px; border-radius: 8px; margin-top: 8px; box-shadow: 0 4px 14px rgba(0,0,0,.2); }
#flash div.error { background: #991b1b; }
.stats { display: flex; gap: 8px; flex-wrap: wrap; }
.stats a { text-decoration: none; }
.summary { display: flex; gap: 28px; flex-wrap: wrap; margin-top: 10px; }
.summary div > span:first-child { display: block; font-size: 12px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.events .forms { display: flex; gap: 8px; flex-wrap: wrap; }
.events form { display: flex; gap: 8px; align-items: center; margin: 0; }
.events form.with-fields { flex: 1 1 100%; }
.events form[hidden] { display: none; }
.events input[type=text] { min-width: 260px; flex: 1; }
.timeline { max-height: 460px; overflow: auto; border: 1px solid var(--line); border-radius: 8px; }
.timeline button { display: grid; grid-template-columns: 48px minmax(0, 1fr) auto; gap: 8px; width: 100%; text-align: left; background: #fff; color: var(--ink); border: 0; border-bottom: 1px solid var(--line); border-radius: 0; padding: 6px 10px; }
.timeline button:hover { background: #f8fafc; }
.timeline button.selected { background: #eef2ff; box-shadow: inset 3px 0 0 #6366f1; }
.timeline .ev { color: var(--muted); font-size: 12px; }
.actions td { font-size: 13px; }
.actions .text { max-width: 420px; white-space: pre-wrap; word-break: break-word; }
.ok { color: #166534; } .fail { color: #991b1b; }
.actions .call + .call { margin-top: 6px; }
.task { border-top: 1px solid var(--line); padding: 10px 0; }
.task:first-of-type { border-top: 0; }
.task h3 { font-size: 13px; margin: 0 0 6px; }
.messages { list-style: none; margin: 0; padding: 0; }
.message, .response { border-left: 3px solid var(--line); padding: 4px 10px; margin: 4px 0; }
.message .text, .response .text, .approval .text { white-space: pre-wrap; word-break: break-word; }
.message.user { border-color: #93c5fd; } .message.assistant { border-color: #a5b4fc; } .message.tool { border-color: #fcd34d; }
.response { border-color: #86efac; }
.role { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); font-weight: 600; margin-right: 6px; }
.tool-call { margin: 4px 0 0 12px; }
.live-answer { border-color: #a5b4fc; }
.live-answer[hidden] { display: none; }
.live-answer pre { max-height: 260px; }
.live-answer pre::after { content: "\\258D"; color: #6366f1; animation: live-caret 1s steps(1) infinite; }
@keyframes live-caret { 50% { opacity: 0; } }
.badge.restarted { background: #fef3c7; color: #92400e; }
.badge.restarted:empty { display: none; }
.approvals { border-color: #fcd34d; background: #fffbeb; }
.approval { padding: 8px 0; border-top: 1px solid #fde68a; }
.approval:first-of-type { border-top: 0; }
.approval form { display: flex; gap: 8px; align-items: center; margin: 6px 0 0; }
.approval input[type=text] { min-width: 240px; }
details summary { cursor: pointer; color: var(--muted); }
.login { max-width: 380px; margin: 80px auto; }
.login input { width: 100%; margin: 8px 0 12px; }
.chart-wrap { overflow: auto; max-height: 75vh; border: 1px solid var(--line); border-radius: 8px; background: #fff; }
.chart-links { margin: 6px 0 0; }
.read-only-notice { border: 1px solid #fcd34d; background: #fffbeb; color: #78350f; border-radius: 8px; padding: 10px 12px; margin: 0 0 16px; }
/* Nothing a read-only process would accept is offered (the page's script may unhide event forms as states change). */
body[data-read-only] form[data-event], body[data-read-only] #stop, body[data-read-only] #events { display: none !important; }
`;

export interface LayoutProps {
  title: string;
  page: string;
  /** Show the log-out button (a token is configured). */
  auth: boolean;
  /**
   * The process serves a store it only reads (`serve --read-only`): a banner says so, and the forms
   * that would send events or spawn agents are not shown (the API would answer `503 read_only`).
   */
  readOnly?: boolean;
  attrs?: Record<string, string>;
  children?: Child;
}

export const Layout: FC<LayoutProps> = ({ title, page, auth, readOnly = false, attrs = {}, children }) => (
  <>
    {raw('<!doctype html>')}
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <link rel="icon" href="data:," />
        <title>{title} · durable-agents</title>
        <style>{raw(CSS + STATECHART_CSS)}</style>
        <script src={CLIENT_SCRIPT_PATH} defer></script>
      </head>
      <body data-page={page} {...(readOnly ? { 'data-read-only': '' } : {})} {...attrs}>
        <header class="top">
          <a class="brand" href="/">
            durable-agents
          </a>
          <a href="/">Agents</a>
          <span class="spacer"></span>
          <a href="/openapi.json" class="small">
            API
          </a>
          {auth ? (
            <form method="post" action={LOGOUT_PATH}>
              <button type="submit" class="small">
                Log out
              </button>
            </form>
          ) : null}
        </header>
        <main>
          {readOnly ? (
            <div class="read-only-notice" id="read-only">
              <strong>Read-only.</strong> This process serves what the store holds and runs nothing: another
              process runs these agents. Spawns, events and approvals go to that process.
            </div>
          ) : null}
          {children}
        </main>
        <div id="flash" aria-live="polite"></div>
      </body>
    </html>
  </>
);

export const StatusBadge: FC<{ status: string }> = ({ status }) => <span class={`badge ${status}`}>{status}</span>;

/** A state value as `a.b` text, marked when the agent sits in `failed`; `id`/`data-cell` let the page script update it. */
export const StateName: FC<{ value: unknown; id?: string; cell?: string }> = ({ value, id, cell }) => {
  const text = stateText(value);
  return (
    <span class={`state-name${text.startsWith('failed') ? ' fail' : ''}`} id={id} data-cell={cell}>
      {text}
    </span>
  );
};
