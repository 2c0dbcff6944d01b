import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * One temp folder per test run, under which test/helpers/temp.ts makes every test's folder, removed
 * when the run ends (the workers are not always given the chance to clean up after themselves).
 */
export default function setup(): () => void {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'da-tests-'));
  process.env.DURABLE_AGENTS_TEST_TMP = root;
  return () => fs.rmSync(root, { recursive: true, force: true });
}
