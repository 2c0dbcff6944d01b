// The docs cannot rot: every code example is the text of a file that a test type-checks and runs,
// every relative link and every repository path they name exists, and the README's Layout states
// the layer rule that test/layout.test.ts enforces.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { codeBlocks, exampleText, headingAnchors, inlineCode, links, markdownFiles, readRepoFile, regionsOf, ROOT } from './markdown.js';

const files = markdownFiles();
const blocks = files.flatMap((file) => codeBlocks(file));
const examples = blocks.filter((b) => b.example !== undefined);
const EXAMPLES_DIR = 'test/docs/examples';

const where = (b: { file: string; line: number }) => `${b.file}:${b.line}`;

describe('the docs', () => {
  it('are README.md and a page per concern under docs/', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/http-api.md', 'docs/guarantees.md', 'docs/machines.md', 'docs/storage.md']));
    expect(examples.length).toBeGreaterThanOrEqual(5);
  });

  it('show each example exactly as its file (or region) has it, with the package names in the imports', () => {
    const wrong = examples
      .filter((b) => b.content !== exampleText(b.example!.path, b.example!.region))
      .map((b) => `${where(b)} differs from ${b.example!.path}${b.example!.region ? `#${b.example!.region}` : ''}`);
    expect(wrong).toEqual([]);
  });

  it('take every TypeScript or JavaScript block from an example file', () => {
    const untaken = blocks.filter((b) => ['ts', 'tsx', 'js', 'typescript', 'javascript'].includes(b.lang) && !b.example).map(where);
    expect(untaken).toEqual([]);
  });

  it('show every example file and every region of one somewhere', () => {
    const shown = new Set(examples.map((b) => `${b.example!.path}#${b.example!.region ?? ''}`));
    const exampleFiles = fs.readdirSync(path.join(ROOT, EXAMPLES_DIR)).map((f) => `${EXAMPLES_DIR}/${f}`);
    const unshown = exampleFiles.flatMap((file) => {
      const regions = regionsOf(file);
      if (regions.length === 0) return shown.has(`${file}#`) ? [] : [file];
      return regions.filter((r) => !shown.has(`${file}#${r}`)).map((r) => `${file}#${r}`);
    });
    expect(unshown).toEqual([]);
  });

  it('link only to files of the repository that exist, and to headings that exist', () => {
    const broken = files.flatMap((file) =>
      links(file)
        .filter(({ target }) => !/^[a-z]+:/i.test(target))
        .filter(({ target }) => {
          const [relative, anchor] = target.split('#') as [string, string | undefined];
          const resolved = relative === '' ? file : path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, file)), relative));
          if (resolved.startsWith('..') || !fs.existsSync(path.join(ROOT, resolved))) return true;
          return anchor !== undefined && resolved.endsWith('.md') && !headingAnchors(resolved).has(anchor);
        })
        .map(({ line, target }) => `${file}:${line} → ${target}`),
    );
    expect(broken).toEqual([]);
  });

  it('name only repository paths that exist', () => {
    const missing = files.flatMap((file) =>
      inlineCode(file)
        .filter(({ code }) => /^(src|test|bench|docs|\.ci)\/[\w./*-]*$/.test(code))
        .filter(({ code }) => !pathExists(code))
        .map(({ line, code }) => `${file}:${line} ${code}`),
    );
    expect(missing).toEqual([]);
  });

  it('point at nothing outside the repository', () => {
    const outside = files.filter((file) => /\/work\/|XSTATE-NOTES|CONTRACT\.md|STYLE\.md/.test(readRepoFile(file)));
    expect(outside).toEqual([]);
  });
});

describe("the README's Layout", () => {
  const readme = readRepoFile('README.md');
  const section = readme.slice(readme.indexOf('\n## Layout'));
  const tree = codeBlocks('README.md', section)[0]!.content;

  it('states the layer order that test/layout.test.ts enforces', () => {
    const stated = /Layer order, lowest first: (.+?)\.?$/m.exec(section)?.[1];
    expect(stated, 'a line "Layer order, lowest first: core → …"').toBeDefined();
    const layers = stated!.split('→').map((layer) => layer.split(',').map((f) => f.replaceAll('`', '').trim()));
    expect(layers).toEqual(enforcedLayers());
  });

  it('lists every folder of src/, and only ones that exist', () => {
    const entries = tree.split('\n').map((l) => l.split(/\s+/)[0]!).filter((e) => e.startsWith('src/') || e.startsWith('test/'));
    expect(entries.filter((e) => !pathExists(e))).toEqual([]);
    const folders = fs.readdirSync(path.join(ROOT, 'src'), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => `src/${d.name}/`);
    expect(folders.filter((f) => !entries.some((e) => e.startsWith(f)))).toEqual([]);
  });
});

/** LAYERS of test/layout.test.ts, read from its text (the test does not export it). */
function enforcedLayers(): string[][] {
  const source = readRepoFile('test/layout.test.ts');
  const literal = /const LAYERS[^=]*=\s*(\[[\s\S]*?\]);/.exec(source)?.[1];
  if (!literal) throw new Error('test/layout.test.ts no longer has `const LAYERS = [...]`: update this test.');
  return JSON.parse(literal.replaceAll("'", '"').replace(/,(\s*\])/g, '$1')) as string[][];
}

/** A path or a simple glob (`test/runtime/*`, `test/fixtures/agent.v1.*.json`) that matches something. */
function pathExists(pattern: string): boolean {
  if (!pattern.includes('*')) return fs.existsSync(path.join(ROOT, pattern));
  const dir = pattern.slice(0, pattern.lastIndexOf('/', pattern.indexOf('*')) + 1);
  const rest = pattern.slice(dir.length);
  const regex = new RegExp(`^${rest.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*')}$`);
  return fs.existsSync(path.join(ROOT, dir)) && fs.readdirSync(path.join(ROOT, dir)).some((f) => regex.test(f) || rest === '*');
}
