// The published types as a user's project sees them: the package `npm pack` makes, installed into a
// project of its own with only what installing it brings (our production dependencies, and the
// consumer's own @types/node), compiled strict with `skipLibCheck: false`, so every .d.ts we ship is
// checked. The consumer uses the typed API, and holds lines that must NOT compile (`@ts-expect-error`):
// were the typing to go loose (an `any` view, any event accepted), the compile fails.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/server-process.js';
import { tempDir } from '../helpers/temp.js';

/** A command to its end: its exit code and what it wrote (stdout, then stderr). */
function run(command: string, args: string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}${error && typeof error.code !== 'number' ? error.message : ''}` });
    });
  });
}

/** dist/ as the sources are now: built by the same helper as `npm start`, which skips a build that is current. */
async function buildIfStale(): Promise<void> {
  const build = await run(process.execPath, ['scripts/build-if-stale.mjs'], ROOT);
  expect(build.code, `the build failed:\n${build.output}`).toBe(0);
}

/** `npm pack` of the repository into `dir`: the tarball's path. */
async function pack(dir: string): Promise<string> {
  // --ignore-scripts: `prepare` would build again what buildIfStale just made current.
  const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], ROOT);
  expect(packed.code, `npm pack failed:\n${packed.output}`).toBe(0);
  const [{ filename }] = JSON.parse(packed.output.slice(packed.output.indexOf('['))) as [{ filename: string }];
  return path.join(dir, filename);
}

/**
 * The packages an install of durable-agents brings, by name: those of package-lock.json's top level
 * not marked `dev` (the others are ours only: a .d.ts needing one of them fails here, as it would
 * for a user). Plus @types/node, which a TypeScript project on Node has of its own.
 */
function installedWithUs(): string[] {
  const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  const names = Object.entries(lock.packages)
    .filter(([key, entry]) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(key) && entry.dev !== true)
    .map(([key]) => key.slice('node_modules/'.length));
  return [...new Set([...names, '@types/node', 'undici-types'])];
}

/** A consumer project in `dir` with the packed durable-agents installed: its own copy, the rest linked. */
async function consumerProject(dir: string, tarball: string): Promise<string> {
  const project = path.join(dir, 'consumer');
  const ours = path.join(project, 'node_modules', 'durable-agents');
  fs.mkdirSync(ours, { recursive: true });
  const untar = await run('tar', ['-xzf', tarball, '-C', ours, '--strip-components=1'], dir);
  expect(untar.code, untar.output).toBe(0);
  for (const name of installedWithUs()) {
    // Never our own sources: the consumer must see only what the tarball holds.
    if (name === 'durable-agents') continue;
    const link = path.join(project, 'node_modules', name);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(path.join(ROOT, 'node_modules', name), link, 'dir');
  }
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2));
  const compilerOptions = {
    strict: true,
    skipLibCheck: false,
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    noEmit: true,
    types: ['node'],
  };
  fs.writeFileSync(path.join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['consumer.ts'] }, null, 2));
  fs.writeFileSync(path.join(project, 'consumer.ts'), CONSUMER);
  return project;
}

/** A user's program: every entry point, a typed handle, a typed `spawnAgent`, and what must not compile. */
const CONSUMER = `import { assign, setup } from 'xstate';
import { z } from 'zod';
import { createRuntime, spawnAgent, type AgentView, type MachineDefinition } from 'durable-agents';
import { openSqliteStore, type SqliteStore } from 'durable-agents/sqlite';
import type { PostgresStore } from 'durable-agents/postgres';
import { createServer } from 'durable-agents/http';
import { pathTests } from 'durable-agents/testing';

const counterMachine = setup({
  types: { context: {} as { count: number }, events: {} as { type: 'inc' } | { type: 'reset' }, input: {} as { start?: number } },
}).createMachine({
  id: 'counter',
  context: ({ input }) => ({ count: input.start ?? 0 }),
  on: {
    inc: { actions: assign({ count: ({ context }) => context.count + 1 }) },
    reset: { actions: assign({ count: 0 }) },
  },
});
const counterDefinition = { name: 'counter', machine: counterMachine } satisfies MachineDefinition;

// A parent whose spawnAgent functions are typed by its chart.
const parentMachine = setup({ types: { context: {} as { child: string } } }).createMachine({
  id: 'parent',
  context: { child: 'c2' },
  entry: [
    spawnAgent('counter', { id: ({ context }) => context.child, input: { start: 1 } }),
    // @ts-expect-error the parent's context has no 'missing'
    spawnAgent('counter', { id: ({ context }) => context.missing }),
  ],
});
const parentDefinition = { name: 'parent', machine: parentMachine, input: z.object({ label: z.string() }) } satisfies MachineDefinition;

const store: SqliteStore = await openSqliteStore(':memory:');
const runtime = await createRuntime({ store, machines: [counterDefinition, parentDefinition] });
const counters = runtime.agentsOf(counterDefinition);
const { view } = await counters.spawn({ id: 'c1', input: { start: 2 } });
await counters.send(view.id, { type: 'inc' });
const v = await counters.view(view.id);
const n: number = v.context.count;
const later: AgentView<{ count: number }> = await counters.waitFor(view.id, (w) => w.context.count > n, { timeoutMs: 1_000 });
await runtime.agentsOf(parentDefinition).spawn({ input: { label: 'p' } });

// @ts-expect-error not an event of the counter
await counters.send(view.id, { type: 'nope' });
// @ts-expect-error not in the counter's context
void v.context.missing;
// @ts-expect-error the counter's input has no 'begin'
await counters.spawn({ input: { begin: 1 } });
// @ts-expect-error the parent's input is its zod schema's
await runtime.agentsOf(parentDefinition).spawn({ input: { name: 'p' } });

const postgres: PostgresStore | undefined = undefined;
console.log(later.context.count, createServer(runtime), pathTests, postgres);
await runtime.close();
`;

describe('the published package, compiled by a consumer', () => {
  it('type-checks with skipLibCheck false, and types views, sends and spawnAgent by the machine', { timeout: 300_000 }, async () => {
    const dir = tempDir('da-consumer-');
    await buildIfStale();
    const project = await consumerProject(dir, await pack(dir));
    // Our own TypeScript, from outside the consumer: the consumer installs none.
    const tsc = await run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project], project);
    expect(tsc.code, `tsc of the consumer project failed:\n${tsc.output}`).toBe(0);
  });
});
