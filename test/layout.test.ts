// The layer rule of the README's Layout section, checked over every import in src/: a folder may
// import its own layer and the layers below it, never one above (so there are no cycles between
// folders either). Type-only imports count too: a type from above is a dependency on its design.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.join(import.meta.dirname, '../src');

/** Lowest first. Folders on one line are side by side: they may not import each other. */
const LAYERS: readonly (readonly string[])[] = [
  ['core'],
  ['durable', 'llm', 'store', 'mcp'],
  ['agents', 'runtime'],
  ['observability', 'testing'],
  ['http'],
  ['service'],
];

function layerOf(folder: string): number {
  const index = LAYERS.findIndex((layer) => layer.includes(folder));
  if (index < 0) throw new Error(`src/${folder} is in no layer: add it to LAYERS (and the README's Layout).`);
  return index;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(entry.name) ? [full] : [];
  });
}

/** `src/runtime/host.ts` → `runtime`; files at the top of src/ (the package entry) → undefined. */
function folderOf(file: string): string | undefined {
  const parts = path.relative(SRC, file).split(path.sep);
  return parts.length > 1 ? parts[0] : undefined;
}

function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]/g), ...text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)];
  return specifiers.map((m) => m[1]!).filter((s) => s.startsWith('.'));
}

const edges = sourceFiles(SRC).flatMap((file) =>
  importsOf(file).map((spec) => ({ file: path.relative(SRC, file), from: folderOf(file), to: folderOf(path.resolve(path.dirname(file), spec)) })),
);

describe('layout', () => {
  it('finds the imports it checks', () => {
    expect(edges.filter((e) => e.from === 'runtime' && e.to === 'store').length).toBeGreaterThan(0);
  });

  it('no folder of src/ imports a folder of a higher layer, nor a side-by-side one', () => {
    const wrong = edges
      .filter((e) => e.from !== undefined && e.to !== undefined && e.from !== e.to)
      .filter((e) => {
        const [from, to] = [layerOf(e.from!), layerOf(e.to!)];
        return to >= from;
      })
      .map((e) => `${e.file} imports src/${e.to}`);
    expect([...new Set(wrong)]).toEqual([]);
  });

  it('nothing below the package entry imports it', () => {
    expect(edges.filter((e) => e.to === undefined && e.from !== undefined).map((e) => e.file)).toEqual([]);
  });
});

describe('the package entry', () => {
  it('loads no storage driver: better-sqlite3 and pg come only with durable-agents/sqlite and /postgres', () => {
    const seen = new Set<string>();
    const packages = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = fs.readFileSync(file, 'utf8');
      // Type-only imports are erased: they load nothing.
      for (const m of text.matchAll(/(?:^|\n)\s*(import|export)(\s+type)?\b[^'"]*?from\s*['"]([^'"]+)['"]/g)) {
        if (m[2]) continue;
        const spec = m[3]!;
        if (!spec.startsWith('.')) packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
        else visit(path.resolve(path.dirname(file), spec).replace(/\.js$/, fs.existsSync(path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts')) ? '.ts' : '.tsx'));
      }
    };
    visit(path.join(SRC, 'index.ts'));
    expect(seen.size).toBeGreaterThan(20);
    expect(packages).toContain('xstate');
    expect([...packages].filter((p) => p === 'better-sqlite3' || p === 'pg')).toEqual([]);
  });
});
