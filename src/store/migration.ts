/** One step of a store's schema, applied once, in id order (each SQL store keeps its own append-only list). */
export interface Migration {
  id: number;
  name: string;
  sql: string;
}
