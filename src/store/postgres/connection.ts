/**
 * How the Postgres store connects: one client configuration for the pool, the writer and the
 * listener, so that every connection works in the same schema and reads integers the same way.
 */
import pg from 'pg';
import { InvalidInputError } from '../../core/errors.js';

/** A schema name goes into identifiers, a channel name and the `search_path` option: plain ones only. */
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export function checkSchemaName(schema: string): void {
  if (!SCHEMA_NAME.test(schema)) {
    throw new InvalidInputError(
      `A Postgres schema name is 1–63 characters from A-Z a-z 0-9 _, not starting with a digit (got ${JSON.stringify(schema)}).`,
    );
  }
}

/**
 * bigint columns (seqs, positions, counts) as numbers: pg hands int8 over as strings because it
 * may exceed 2^53, which none of ours come near.
 */
const types = new pg.TypeOverrides();
types.setTypeParser(pg.types.builtins.INT8, Number);

/**
 * A database that goes away without closing the connection (a dropped network) must surface as an
 * error, not as a query that never settles: a lease renewal stuck forever would keep this process
 * running agents others have taken over. TCP keep-alives find the dead peer; connecting gives up.
 */
const LIVENESS: pg.ClientConfig = { keepAlive: true, keepAliveInitialDelayMillis: 5_000, connectionTimeoutMillis: 10_000 };

/** The configuration of every connection; with a schema, each one works in it (`search_path`). */
export function clientConfig(url: string, schema: string | undefined): pg.ClientConfig {
  const base = { ...LIVENESS, types };
  if (schema === undefined) return { connectionString: url, ...base };
  const searchPath = `-c search_path=${pg.escapeIdentifier(schema)}`;
  // pg lets the connection string's parameters win over the configuration's: an `options` in the
  // URL would drop our search_path, so it is taken out and both are passed together.
  const parsed = parseUrl(url);
  const own = parsed?.searchParams.get('options');
  if (!parsed || !own) return { connectionString: url, ...base, options: searchPath };
  parsed.searchParams.delete('options');
  return { connectionString: parsed.toString(), ...base, options: `${own} ${searchPath}` };
}

/** The URL for logs: any password replaced by `***`. */
export function redactUrl(url: string): string {
  const parsed = parseUrl(url);
  if (!parsed) return url.replace(/(\/\/[^/@:]*:)[^@/]*@/, '$1***@');
  if (parsed.password) parsed.password = '***';
  if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***');
  return parsed.toString();
}

function parseUrl(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}
