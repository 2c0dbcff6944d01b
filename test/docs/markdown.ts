// Reading README.md and docs/*.md for the docs tests: fenced blocks (with the example marker before
// them), links, inline code, and the example files they are taken from.
import fs from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** README.md and every page of docs/, as paths relative to the repository root. */
export function markdownFiles(): string[] {
  const docs = fs.existsSync(path.join(ROOT, 'docs')) ? fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')) : [];
  return ['README.md', ...docs.sort().map((f) => `docs/${f}`)];
}

export function readRepoFile(file: string): string {
  return fs.readFileSync(path.join(ROOT, file), 'utf8');
}

export interface CodeBlock {
  /** The markdown file and the 1-based line of the opening fence. */
  file: string;
  line: number;
  lang: string;
  /** The lines between the fences, de-indented by the fence's indentation, joined by `\n`. */
  content: string;
  /** From `<!-- example: PATH -->` or `<!-- example: PATH#REGION -->` on the last non-blank line before the fence. */
  example?: { path: string; region: string | undefined };
}

const FENCE = /^(\s*)```(\S*)\s*$/;
const EXAMPLE_MARKER = /^\s*<!-- example: ([^\s#]+)(?:#(\S+))? -->\s*$/;

export function codeBlocks(file: string, text = readRepoFile(file)): CodeBlock[] {
  const lines = text.split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && lines[j]!.trimEnd() !== `${indent}\`\`\``) {
      const line = lines[j]!;
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart());
      j++;
    }
    if (j === lines.length) throw new Error(`${file}:${i + 1}: a code block is never closed.`);
    let before = i - 1;
    while (before >= 0 && lines[before]!.trim() === '') before--;
    const marker = before >= 0 ? EXAMPLE_MARKER.exec(lines[before]!) : null;
    blocks.push({
      file,
      line: i + 1,
      lang: open[2]!,
      content: body.join('\n'),
      ...(marker ? { example: { path: marker[1]!, region: marker[2] } } : {}),
    });
    i = j;
  }
  return blocks;
}

/** The text outside fenced blocks, with inline code spans kept (links inside them are not links). */
export function proseLines(file: string, text = readRepoFile(file)): { line: number; text: string }[] {
  const result: { line: number; text: string }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, i) => {
    const open = FENCE.exec(line);
    if (fence === undefined && open) fence = `${open[1]}\`\`\``;
    else if (fence !== undefined && line.trimEnd() === fence) fence = undefined;
    else if (fence === undefined) result.push({ line: i + 1, text: line });
  });
  return result;
}

const withoutInlineCode = (line: string) => line.replace(/`[^`]*`/g, '');

/** `[text](target)` links of the prose (not in code), with their line. */
export function links(file: string): { line: number; target: string }[] {
  return proseLines(file).flatMap(({ line, text }) =>
    [...withoutInlineCode(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => ({ line, target: m[1]! })),
  );
}

/** Every inline code span of the prose. */
export function inlineCode(file: string): { line: number; code: string }[] {
  return proseLines(file).flatMap(({ line, text }) => [...text.matchAll(/`([^`]+)`/g)].map((m) => ({ line, code: m[1]! })));
}

/** GitHub's anchors for the headings of a markdown file (lower case, punctuation dropped, spaces to hyphens, repeats numbered). */
export function headingAnchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const { text } of proseLines(file)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (!heading) continue;
    const base = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

const REGION_MARKER = /^\s*\/\/ #(?:end)?region\b.*$/;

/** An example file's text (or one `// #region NAME` of it) as the docs show it: region markers left out, no final newline. */
export function exampleText(file: string, region?: string): string {
  const lines = readRepoFile(file).replace(/\n$/, '').split('\n');
  let selected = lines;
  if (region !== undefined) {
    const start = lines.findIndex((l) => l.trim() === `// #region ${region}`);
    if (start < 0) throw new Error(`${file} has no "// #region ${region}".`);
    const end = lines.findIndex((l, i) => i > start && /^\s*\/\/ #endregion\b/.test(l));
    if (end < 0) throw new Error(`${file}: region "${region}" is never closed.`);
    selected = lines.slice(start + 1, end);
  }
  return toPackageImports(
    file,
    selected.filter((l) => !REGION_MARKER.test(l)).join('\n'),
  );
}

/** The regions an example file declares. */
export function regionsOf(file: string): string[] {
  return [...readRepoFile(file).matchAll(/^\s*\/\/ #region (\S+)/gm)].map((m) => m[1]!);
}

/** What each public entry point is called in a user's code. */
const PACKAGE_ENTRIES: Readonly<Record<string, string>> = {
  'src/index.ts': 'durable-agents',
  'src/store/sqlite/index.ts': 'durable-agents/sqlite',
  'src/store/postgres/index.ts': 'durable-agents/postgres',
  'src/testing/index.ts': 'durable-agents/testing',
  'src/http/index.ts': 'durable-agents/http',
};

/**
 * Examples import the package's entry points by relative path (so that they type-check and run in
 * this repository); the docs show the package's names. Any other import of src/ is an error: an
 * example may use only what the package exports.
 */
export function toPackageImports(file: string, text: string): string {
  return text.replace(/(\bfrom\s+|\bimport\s+)'(\.{1,2}\/[^']+)'/g, (whole, keyword: string, specifier: string) => {
    const target = path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, file)), specifier)).replace(/\.js$/, '.ts');
    if (!target.startsWith('src/')) return whole;
    const name = PACKAGE_ENTRIES[target];
    if (!name) throw new Error(`${file} imports ${target}, which the package does not export: use one of ${Object.values(PACKAGE_ENTRIES).join(', ')}.`);
    return `${keyword}'${name}'`;
  });
}
