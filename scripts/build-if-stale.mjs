#!/usr/bin/env node
// `npm start`'s prestart: runs `npm run build` only when the build in dist/ may be out of date, and
// otherwise prints nothing. Out of date: no stamp of a successful build (dist/.build-stamp), or a
// file or folder under src/ (a folder's time changes when a file in it is added, removed or renamed),
// tsconfig.json, tsconfig.build.json or package.json newer than the stamp. The stamp gets the time the
// build started, so an edit made while tsc runs is seen at the next start. Plain Node, no dependency.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const stamp = path.join(root, 'dist', '.build-stamp');
const inputs = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json'].map((p) => path.join(root, p));

/** The newest modification time (ms) of `file`, and of everything under it when it is a folder. */
function newest(file) {
  let stat;
  try {
    stat = fs.statSync(file);
  } catch {
    return 0;
  }
  let time = stat.mtimeMs;
  if (stat.isDirectory()) for (const entry of fs.readdirSync(file)) time = Math.max(time, newest(path.join(file, entry)));
  return time;
}

function staleness() {
  let built;
  try {
    built = fs.statSync(stamp).mtimeMs;
  } catch {
    return 'no successful build recorded (dist/.build-stamp)';
  }
  if (!fs.existsSync(path.join(root, 'dist', 'service', 'cli.js'))) return 'dist/service/cli.js is missing';
  const changed = inputs.find((input) => newest(input) > built);
  return changed ? `${path.relative(root, changed)} changed since the last build` : undefined;
}

const reason = staleness();
if (reason) {
  console.error(`durable-agents: ${reason}: building (npm run build)`);
  const startedAt = new Date();
  const build = spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'build'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
  if (build.status !== 0) process.exit(build.status ?? 1);
  fs.writeFileSync(stamp, `built from the sources as they were at ${startedAt.toISOString()}\n`);
  fs.utimesSync(stamp, startedAt, startedAt);
}
