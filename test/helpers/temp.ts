import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** A fresh directory in this test run's temp folder (test/global-setup.ts removes it at the end). */
export function tempDir(prefix = 'da-'): string {
  return fs.mkdtempSync(path.join(process.env.DURABLE_AGENTS_TEST_TMP ?? os.tmpdir(), prefix));
}

export function tempDbFile(): string {
  return path.join(tempDir(), 'agents.db');
}

/** A TCP port free on 127.0.0.1 now, for a server that must listen (or come back) on a known address. */
export async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
