/** Reading XState state values for labels and text (metrics, traces, the dashboard). */

/** The top-level state of a state value: `{callingLLM: 'requesting'}` → `callingLLM`. Bounded: fit for labels. */
export function topLevelState(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') return Object.keys(value)[0] ?? '?';
  return '?';
}

/** The whole state value as text: `{callingLLM: 'requesting'}` → `callingLLM.requesting` (parallel regions joined with `, `). */
export function stateText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (!value || typeof value !== 'object') return value === null || value === undefined ? '—' : String(value);
  return Object.entries(value as Record<string, unknown>)
    .map(([key, child]) => {
      const inner = stateText(child);
      return child && (typeof child === 'string' || typeof child === 'object') ? `${key}.${inner}` : key;
    })
    .join(', ');
}
