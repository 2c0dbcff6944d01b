/**
 * File modes for tests that need a file a process may not write (chmod 0444). As root they do not
 * bind: CAP_DAC_OVERRIDE writes anyway. So such a test runs its process through `unprivileged()`:
 * as it is when modes bind this user, and as root without CAP_DAC_OVERRIDE (util-linux's setpriv
 * drops it from the bounding set, which a root exec's capabilities come from), so that the same
 * real permission check happens either way. Reading and searching stay allowed
 * (CAP_DAC_READ_SEARCH is kept): the repository may sit in a 0700 folder of another owner.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './temp.js';

let prefix: string[] | undefined;

/** The command prefix (maybe none) under which a 0444 file cannot be written; checked once, throws when none is found. */
export function unprivileged(): string[] {
  return (prefix ??= findPrefix());
}

function findPrefix(): string[] {
  const file = path.join(tempDir('da-modes-'), 'read-only.txt');
  fs.writeFileSync(file, 'x');
  fs.chmodSync(file, 0o444);
  if (!writable([], file)) return [];
  const setpriv = ['setpriv', '--bounding-set=-dac_override', '--'];
  if (!writable(setpriv, file)) return setpriv;
  throw new Error(
    'This test needs a process that may not write a 0444 file: this user writes it anyway (root), and ' +
      '"setpriv --bounding-set=-dac_override" (util-linux) could not start one that does not. Run the tests as another user, or install util-linux.',
  );
}

/** Whether a node process started through `command` opens the file for writing. */
function writable(command: string[], file: string): boolean {
  const probe = `try { require('node:fs').openSync(${JSON.stringify(file)}, 'r+'); console.log('writable'); } catch (e) { console.log(e.code); }`;
  const [bin, ...args] = [...command, process.execPath, '-e', probe];
  const result = spawnSync(bin!, args, { encoding: 'utf8' });
  if (result.error || result.status !== 0) return true; // that command cannot run here: no use
  return result.stdout.trim() === 'writable';
}
