// A stdio MCP server behind a logging proxy, for tests of what reaches a server:
//
//   node mcp-log-proxy.mjs LOG HOLD -- COMMAND [ARGS...]
//
// runs COMMAND (a stdio MCP server) and relays the client's messages to it, and its answers back.
// Each `tools/call` is appended to LOG as a JSON line `{"event":"received"|"forwarded","id","name",
// "key"}` (`key`: the request's `_meta["durable-agents/idempotency-key"]`). While the file HOLD
// exists, a `tools/call` (and what follows it) is held, not relayed: a test can kill the client
// while a call is on its way. When the client goes (stdin ends), the server is killed and what is
// held is dropped: that call never reached the server.
import { spawn } from 'node:child_process';
import fs from 'node:fs';

const [log, hold, separator, command, ...args] = process.argv.slice(2);
if (!log || !hold || separator !== '--' || !command) {
  process.stderr.write('usage: mcp-log-proxy.mjs LOG HOLD -- COMMAND [ARGS...]\n');
  process.exit(2);
}
const server = spawn(command, args, { stdio: ['pipe', 'inherit', 'inherit'] });
server.on('exit', (code) => process.exit(code ?? 1));
let closed = false;
let queue = Promise.resolve();
let pending = '';

const record = (event, message) =>
  fs.appendFileSync(log, `${JSON.stringify({ event, id: message.id, name: message.params?.name, key: message.params?._meta?.['durable-agents/idempotency-key'] ?? null })}\n`);

async function relay(line) {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    message = undefined;
  }
  const isCall = message?.method === 'tools/call';
  if (isCall) record('received', message);
  while (isCall && fs.existsSync(hold) && !closed) await new Promise((resolve) => setTimeout(resolve, 20));
  if (closed) return;
  if (isCall) record('forwarded', message);
  server.stdin.write(`${line}\n`);
}

process.stdin.on('data', (chunk) => {
  pending += chunk.toString('utf8');
  let newline;
  while ((newline = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, newline);
    pending = pending.slice(newline + 1);
    if (line.trim() !== '') queue = queue.then(() => relay(line));
  }
});
process.stdin.on('end', () => {
  closed = true;
  server.kill('SIGKILL');
});
