import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A fresh directory under the OS temp dir; the caller removes it (or the OS does). */
export function tempDir(prefix = 'da-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function tempDbFile(): string {
  return path.join(tempDir(), 'agents.db');
}
