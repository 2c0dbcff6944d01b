// `serve | cat` and Ctrl-C: both processes get the signal, the reader of the server's stdout is
// gone while the server still logs its shutdown (EPIPE); it must still exit 0. A second signal
// exits at once, with 1, while a first shutdown waits for an in-flight request.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/server-process.js';
import { tempDbFile } from '../helpers/temp.js';

const CLI = [process.execPath, '--conditions=development', '--import', 'tsx', 'src/service/cli.ts', 'serve', '--port', '0'];
const pids: number[] = [];
afterEach(() => {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** `serve | cat` with the server's JSON lines read from cat's stdout; resolves once it listens. */
async function servePipedIntoCat(db: string) {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_FORMAT: 'json', LOG_LEVEL: 'info' };
  for (const name of ['PORT', 'HOST', 'DURABLE_AGENTS_DB', 'DATABASE_URL', 'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'DURABLE_AGENTS_TOKEN']) delete env[name];
  const server = spawn(CLI[0]!, [...CLI.slice(1), '--db', db], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const cat = spawn('cat', [], { stdio: [server.stdout!, 'pipe', 'inherit'] });
  pids.push(server.pid!, cat.pid!);
  const exit = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`did not start:\n${text}`)), 30_000);
    cat.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = /"url":"(http:[^"]+)"/.exec(text);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
  });
  return { server, cat, exit, url };
}

function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  return Promise.race([promise, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), ms))]);
}

describe('serve and signals', () => {
  it('exits 0 on SIGTERM when the reader of its stdout was signalled with it (EPIPE)', async () => {
    // The hang depended on timing: a few pipelines at once make it show.
    const runs = await Promise.all([1, 2, 3, 4].map(() => servePipedIntoCat(tempDbFile())));
    for (const run of runs) {
      run.cat.kill('SIGTERM');
      run.server.kill('SIGTERM');
    }
    const codes = await Promise.all(runs.map((run) => within(run.exit, 8_000)));
    expect(codes).toEqual([0, 0, 0, 0]);
  }, 60_000);

  it('exits 0 on SIGTERM after the reader of its stdout is gone', async () => {
    const run = await servePipedIntoCat(tempDbFile());
    run.cat.kill('SIGKILL');
    await new Promise((resolve) => run.cat.once('exit', resolve));
    run.server.kill('SIGTERM');
    expect(await within(run.exit, 8_000)).toBe(0);
  }, 60_000);

  it('exits at once, with 1, on a second signal while the first shutdown waits for a request', async () => {
    const run = await servePipedIntoCat(tempDbFile());
    // A request whose headers never end: the shutdown waits for it (up to its grace period).
    const { port } = new URL(run.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    await new Promise((resolve) => setTimeout(resolve, 200));
    run.server.kill('SIGTERM');
    expect(await within(run.exit, 1_000)).toBe('timeout');
    const second = Date.now();
    run.server.kill('SIGTERM');
    expect(await within(run.exit, 3_000)).toBe(1);
    expect(Date.now() - second).toBeLessThan(3_000);
    socket.destroy();
  }, 60_000);
});
