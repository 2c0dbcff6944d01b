// The real MCP servers the tests run, from node_modules: server-everything (over stdio, or over
// streamable HTTP in a process of its own on a free port) and server-filesystem on a folder.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { McpServerConfig } from '../../src/mcp/types.js';
import { freePort } from '../helpers/temp.js';

const MODULES = path.join(import.meta.dirname, '../../node_modules/@modelcontextprotocol');
export const EVERYTHING_BIN = path.join(MODULES, 'server-everything/dist/index.js');
export const FILESYSTEM_BIN = path.join(MODULES, 'server-filesystem/dist/index.js');

/** server-everything as a stdio server (started by the client when first used). */
export const everythingStdio = (extra: Partial<McpServerConfig> = {}): McpServerConfig => ({ command: process.execPath, args: [EVERYTHING_BIN, 'stdio'], ...extra }) as McpServerConfig;

/** server-filesystem on `folder` as a stdio server. */
export const filesystemStdio = (folder: string, extra: Partial<McpServerConfig> = {}): McpServerConfig => ({ command: process.execPath, args: [FILESYSTEM_BIN, folder], ...extra }) as McpServerConfig;

/** server-everything over streamable HTTP, listening once this resolves. */
export async function startEverythingHttp(port?: number): Promise<{ url: string; port: number; close(): Promise<void> }> {
  port ??= await freePort();
  const child: ChildProcess = spawn(process.execPath, [EVERYTHING_BIN, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`server-everything did not start: ${text}`)), 15_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('listening on port')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}): ${text}`)));
  });
  child.stderr!.resume();
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
