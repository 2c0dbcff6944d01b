// docs/serve.md's flag table against the table the server parses its flags with (and prints as
// `--help`): every flag, in order, with its environment variable and its default.
import { describe, expect, it } from 'vitest';
import { ALL_OPTIONS, type Option } from '../../src/service/config.js';
import { proseLines } from './markdown.js';

interface Row {
  flag: string;
  env: string;
  default: string;
}

function flagRows(): Row[] {
  const rows = proseLines('docs/serve.md')
    .map(({ text }) => text)
    .filter((line) => line.startsWith('| `--'))
    .map((line) => line.slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim().replaceAll('\\|', '|')));
  return rows.map(([flag, env, defaultText]) => ({ flag: flag!, env: env!, default: defaultText! }));
}

const flagText = (o: Option<unknown>) => `\`--${o.flag}${o.value === '' || o.value.startsWith('[') ? o.value : ` ${o.value}`}\``;

/** A default is stated as its value (3000, `full`); no default as the word the help uses (unset, off). */
function statesDefault(cell: string, o: Option<unknown>): boolean {
  const expected = o.default === undefined ? (o.defaultText ?? 'unset').split(/[:;]/)[0]! : String(o.default);
  return cell.replaceAll('`', '').startsWith(expected);
}

describe('docs/serve.md', () => {
  it('lists every serve flag in the order of --help, with its environment variable', () => {
    expect(flagRows().map((r) => [r.flag, r.env])).toEqual(ALL_OPTIONS.map((o) => [flagText(o), `\`${o.env}\``]));
  });

  it("states each flag's default", () => {
    const rows = flagRows();
    const wrong = ALL_OPTIONS.filter((o, i) => !statesDefault(rows[i]?.default ?? '', o)).map((o) => `--${o.flag}: ${String(o.default ?? o.defaultText)}`);
    expect(wrong).toEqual([]);
  });
});
