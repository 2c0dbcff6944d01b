/** `durable-agents/sqlite`: the default store, one SQLite file (loads better-sqlite3's native addon). */
export { openSqliteStore, SqliteStore, type SqliteStoreOptions } from './sqlite-store.js';
