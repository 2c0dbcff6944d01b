import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A fresh directory in this test run's temp folder (test/global-setup.ts removes it at the end). */
export function tempDir(prefix = 'da-'): string {
  return fs.mkdtempSync(path.join(process.env.DURABLE_AGENTS_TEST_TMP ?? os.tmpdir(), prefix));
}

export function tempDbFile(): string {
  return path.join(tempDir(), 'agents.db');
}
