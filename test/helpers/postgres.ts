/**
 * The Postgres tests' database: each test works in a schema of its own, and the test file drops
 * them all when it ends. Importing this file registers those hooks, and a check that fails every
 * test of the file when PostgreSQL cannot be reached (a skipped test would pass CI unnoticed).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeEach } from 'vitest';

/**
 * The run's PostgreSQL: `TEST_DATABASE_URL`, which test/global-setup.ts sets to a throwaway server
 * it started when it was not given. Has no query string: callers may append one.
 */
export const postgresUrl = testDatabaseUrl();

function testDatabaseUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is unset: test/global-setup.ts sets it, so run the tests with vitest');
  if (url.includes('?')) throw new Error(`TEST_DATABASE_URL must have no query string (the tests append one): ${url}`);
  return url;
}

const schemas: string[] = [];

/** A schema name no other test uses (the store creates it); dropped when the test file ends. */
export function freshSchema(): string {
  const name = `da_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  schemas.push(name);
  return name;
}

/** Runs one statement on a connection of its own, in `schema` when given: for inspecting what a store wrote. */
export async function sql<R extends pg.QueryResultRow = pg.QueryResultRow>(
  text: string,
  params: unknown[] = [],
  schema?: string,
): Promise<R[]> {
  const client = new pg.Client({
    connectionString: postgresUrl,
    ...(schema === undefined ? {} : { options: `-c search_path=${pg.escapeIdentifier(schema)}` }),
  });
  await client.connect();
  try {
    return (await client.query<R>(text, params)).rows;
  } finally {
    await client.end();
  }
}

/** Checked once per file; every test then fails (none is skipped) with this message when it is down. */
let reachable: Promise<void> | undefined;

async function checkReachable(): Promise<void> {
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query('select 1');
  } catch (err) {
    throw new Error(
      `These tests need the PostgreSQL of TEST_DATABASE_URL, ${postgresUrl}; it cannot be reached: ${(err as Error).message}`,
      { cause: err },
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}

beforeEach(async () => {
  await (reachable ??= checkReachable());
});

afterAll(async () => {
  if (schemas.length === 0) return;
  await sql(`drop schema if exists ${schemas.map((s) => pg.escapeIdentifier(s)).join(', ')} cascade`);
  schemas.length = 0;
});
