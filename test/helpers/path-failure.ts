import fs from 'node:fs';
import path from 'node:path';

/** The error a path-test case fails with; the database a failure keeps for inspection is removed. */
export async function failureOf(run: Promise<unknown>): Promise<Error> {
  const error = await run.then(
    () => new Error('expected the case to fail, but it passed'),
    (e: unknown) => e as Error,
  );
  const kept = /database kept for inspection: (.+)$/m.exec(error.message)?.[1];
  if (kept) fs.rmSync(path.dirname(kept), { recursive: true, force: true });
  return error;
}
