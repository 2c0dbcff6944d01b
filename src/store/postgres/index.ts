/** `durable-agents/postgres`: the store many processes share (loads `pg`). */
export { openPostgresStore, PostgresStore, type PostgresStoreOptions } from './postgres-store.js';
