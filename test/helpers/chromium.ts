/**
 * The browser of the browser tests: the executable `CHROMIUM_PATH` names, otherwise the Chromium
 * that `npm install` brought (the @sparticuz/chromium package carries a headless build of it and
 * a few fonts, brotli-compressed), so that a machine with nothing but Node can run them.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { chromium, type Browser } from 'playwright-core';

const CACHE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../node_modules/.cache/durable-agents');

/**
 * The same flags for either browser. Not the package's own `chromium.args`: those are for AWS
 * Lambda (`--single-process`, and `--disable-web-security`, which would switch off the same-origin
 * rules the dashboard's login cookie lives under).
 */
const ARGS = [
  '--headless',
  '--no-sandbox', // the tests may run as root, where Chromium's sandbox refuses to start
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export async function launchChromium(): Promise<Browser> {
  const named = process.env.CHROMIUM_PATH;
  if (named) {
    if (!fs.existsSync(named)) throw new Error(`CHROMIUM_PATH is ${named}, which does not exist (unset it to use the Chromium npm install brought)`);
    return chromium.launch({ executablePath: named, args: ARGS });
  }
  const bundled = await bundledChromium();
  // Its fonts and no others: a machine without fonts would lay every text out zero pixels wide
  // (nothing to click), and the screenshots look the same on every machine.
  const env = { ...process.env, FONTCONFIG_FILE: bundled.fontconfig };
  return chromium.launch({ executablePath: bundled.executable, args: ARGS, env });
}

/**
 * The package's Chromium and fonts, unpacked once per package version into node_modules/.cache
 * (a fresh `npm ci` starts over): the browser is 200 MB and takes seconds to write, too much for
 * every run. Not with the package's `executablePath()`, which unpacks into the top of /tmp and
 * returns whatever file /tmp/chromium already is: another version's, or one a run beside this one
 * is still writing. Here the files are written in a folder of their own, renamed into place whole.
 */
async function bundledChromium(): Promise<{ executable: string; fontconfig: string }> {
  // The package exports only its entry (somewhere under build/); the compressed files are in bin/ at its root.
  let packageDir = path.dirname(createRequire(import.meta.url).resolve('@sparticuz/chromium'));
  while (!fs.existsSync(path.join(packageDir, 'bin')) && path.dirname(packageDir) !== packageDir) packageDir = path.dirname(packageDir);
  const { version } = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { version: string };
  const dir = path.join(CACHE, `chromium-${version}`);
  const unpacked = { executable: path.join(dir, 'chromium'), fontconfig: path.join(dir, 'fonts.conf') };
  if (fs.existsSync(dir)) return unpacked;

  fs.mkdirSync(CACHE, { recursive: true });
  const partial = fs.mkdtempSync(`${dir}.partial-`);
  try {
    const unbrotli = (name: string, to: string, mode = 0o644) =>
      pipeline(fs.createReadStream(path.join(packageDir, 'bin', name)), zlib.createBrotliDecompress(), fs.createWriteStream(to, { mode }));
    await unbrotli('chromium.br', path.join(partial, 'chromium'), 0o755);
    fs.mkdirSync(path.join(partial, 'fonts'));
    // Through a file, not a pipe into tar: tar may exit once it has read the archive's end, before
    // the pipe is drained, which failed a run on a loaded machine ("Premature close").
    const fonts = path.join(partial, 'fonts.tar');
    await unbrotli('fonts.tar.br', fonts);
    await untar(fonts, path.join(partial, 'fonts'));
    fs.rmSync(fonts);
    fs.writeFileSync(
      path.join(partial, 'fonts.conf'),
      `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n` +
        `<fontconfig><dir>${path.join(dir, 'fonts')}</dir><cachedir>${path.join(dir, 'fontconfig-cache')}</cachedir></fontconfig>\n`,
    );
    fs.renameSync(partial, dir);
  } catch (err) {
    fs.rmSync(partial, { recursive: true, force: true });
    if (!fs.existsSync(dir)) throw err; // else a run beside this one unpacked it first
  }
  return unpacked;
}

/** Extracts a tar file into `dir` with the system's `tar`. */
async function untar(archive: string, dir: string): Promise<void> {
  const tar = spawn('tar', ['-x', '--no-same-owner', '-f', archive, '-C', dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  const code = await new Promise<number | null>((resolve, reject) => tar.once('error', reject).once('exit', resolve));
  if (code !== 0) throw new Error(`tar exited with ${code} while unpacking Chromium's fonts`);
}
