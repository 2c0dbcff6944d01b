import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/config.js';
import type { Greeting } from '../../src/service/greeting.js';
import { chooseLogFormat, openLogOutput, type Output } from '../../src/service/log-output.js';

/** A stand-in for stdout: a terminal or not, with colours or not; keeps what was written, in order. */
function fakeStdout({ tty, colors = false }: { tty: boolean; colors?: boolean }): Output & { text(): string } {
  const chunks: string[] = [];
  return {
    ...(tty ? { isTTY: true, hasColors: () => colors } : {}),
    write: (chunk: string) => chunks.push(chunk),
    text: () => chunks.join(''),
  };
}

const GREETING: Greeting = {
  url: 'http://127.0.0.1:3000',
  llm: { kind: 'simulated', description: 'simulated LLM (fault rate 0)', model: 'gpt-4o-mini' },
  store: { kind: 'sqlite', location: '/srv/agents.db', synchronous: 'full' },
  auth: false,
};

const ANSI = /\u001b\[/;

describe('chooseLogFormat', () => {
  it('is pretty on a terminal and JSON elsewhere, unless LOG_FORMAT says which', () => {
    expect(chooseLogFormat('auto', true)).toBe('pretty');
    expect(chooseLogFormat('auto', false)).toBe('json');
    expect(chooseLogFormat('json', true)).toBe('json');
    expect(chooseLogFormat('json', false)).toBe('json');
    expect(chooseLogFormat('pretty', false)).toBe('pretty');
  });

  it('follows LOG_FORMAT from the environment through the config', () => {
    const { log } = loadConfig([], { LOG_FORMAT: 'json' });
    expect(chooseLogFormat(log.format, true)).toBe('json');
    expect(chooseLogFormat(loadConfig([], {}).log.format, true)).toBe('pretty');
  });
});

describe('openLogOutput', () => {
  it('writes one JSON object a line when stdout is not a terminal, the greeting included', () => {
    const out = fakeStdout({ tty: false });
    const { format, log, announce } = openLogOutput({ level: 'info', format: 'auto' }, out);
    expect(format).toBe('json');
    log.info({ store: 'sqlite' }, 'store open');
    announce(GREETING);
    const lines = out.text().trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ level: 30, msg: 'store open', store: 'sqlite', name: 'durable-agents' });
    expect(lines[1]).toMatchObject({ url: 'http://127.0.0.1:3000', dashboard: 'http://127.0.0.1:3000/', store: 'sqlite', location: '/srv/agents.db' });
    expect(String(lines[1]!.msg)).toMatch(/^durable-agents listening on http:\/\/127\.0\.0\.1:3000 /);
    expect(lines).toHaveLength(2);
  });

  it('writes JSON on a terminal too when LOG_FORMAT=json', () => {
    const out = fakeStdout({ tty: true, colors: true });
    const { format, log } = openLogOutput(loadConfig([], { LOG_FORMAT: 'json' }).log, out);
    expect(format).toBe('json');
    log.warn('careful');
    expect(JSON.parse(out.text())).toMatchObject({ level: 40, msg: 'careful' });
  });

  it('writes readable lines on a terminal, log lines and greeting in the order they were written', () => {
    const out = fakeStdout({ tty: true });
    const { format, log, announce } = openLogOutput({ level: 'info', format: 'auto' }, out);
    expect(format).toBe('pretty');
    log.info({ store: 'sqlite' }, 'store open');
    announce(GREETING);
    log.info('after the greeting');
    const text = out.text();
    expect(text).not.toMatch(/^\{/m);
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: store open \{"store":"sqlite"\}$/m);
    expect(text).not.toContain('durable-agents listening'); // the greeting says it, once
    expect(text.indexOf('store open')).toBeLessThan(text.indexOf('Dashboard'));
    expect(text.indexOf('Dashboard')).toBeLessThan(text.indexOf('after the greeting'));
    expect(text).not.toMatch(ANSI); // this terminal has no colours
  });

  it('colours the lines only where the terminal has colours', () => {
    const out = fakeStdout({ tty: true, colors: true });
    const { log, announce } = openLogOutput({ level: 'info', format: 'auto' }, out);
    log.info('hello');
    announce(GREETING);
    expect(out.text()).toMatch(ANSI);
  });

  it('keeps to the configured level', () => {
    const out = fakeStdout({ tty: false });
    const { log } = openLogOutput(loadConfig(['--log-level', 'warn'], {}).log, out);
    log.info('quiet');
    log.warn('loud');
    expect(out.text().trimEnd().split('\n').map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['loud']);
  });
});
