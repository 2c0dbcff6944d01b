import { ALL_OPTIONS, type Option } from './config.js';

/** `durable-agents --help`: the serve flags are written from the config table, so their defaults cannot drift. */
export function usage(): string {
  const rows = ALL_OPTIONS.map((o) => [flagText(o), o.env, `${o.help} [default: ${defaultText(o)}]`] as const);
  const flagWidth = Math.max(...rows.map(([flag]) => flag.length));
  const envWidth = Math.max(...rows.map(([, env]) => env.length));
  return [
    'Usage: durable-agents serve [flags]',
    '       durable-agents paths <machine> [--format text|json] [--depth N] [--config FILE]',
    '       durable-agents lint <machine> [--format text|json] [--config FILE]',
    '',
    'serve flags, each with the environment variable it reads when the flag is not given:',
    ...rows.map(([flag, env, help]) => `  ${flag.padEnd(flagWidth)}  ${env.padEnd(envWidth)}  ${help}`),
    '',
    "The inspector's page embeds Stately's web app: the browser needs internet access.",
    '`durable-agents paths --help` tells about paths, `durable-agents lint --help` about lint.',
  ].join('\n');
}

function flagText(option: Option<unknown>): string {
  // A switch (`--read-only`) stands alone; `--inspect[=PORT]` takes its value after `=` only; the others take the next word.
  if (option.value === '') return `--${option.flag}`;
  return option.value.startsWith('[') ? `--${option.flag}${option.value}` : `--${option.flag} ${option.value}`;
}

function defaultText(option: Option<unknown>): string {
  return option.defaultText ?? String(option.default);
}
