/**
 * What differs between the two SQL stores' texts of one shared query. Both keep JSON and
 * timestamps as `text` and have the same tables (see each store's migrations), so only the
 * placeholders differ.
 */
export interface SqlDialect {
  /** The placeholder of the n-th parameter (from 1). */
  param(n: number): string;
}

/** A query text with its parameters, in placeholder order. */
export interface SqlQuery {
  text: string;
  params: unknown[];
}

export const sqliteDialect: SqlDialect = { param: () => '?' };

export const postgresDialect: SqlDialect = { param: (n) => `$${n}` };
