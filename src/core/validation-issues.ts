import type { ZodError } from 'zod';
import { shorten } from './errors.js';

/** Longest text kept of one issue: zod names every unrecognized key of an object in a single issue. */
const MAX_ISSUE_CHARS = 200;

/**
 * A failed zod validation as one bounded line: `path: message` for the first `max` issues, joined
 * with '; ', then `and N more` (a spawn with 10,000 bad tasks must not answer with 10,000 messages).
 * An issue about the value as a whole is named `(value)`; messages lose their trailing period so the
 * caller can end the sentence; an issue longer than 200 characters is cut with '…'.
 */
export function describeIssues(error: ZodError, max = 5): string {
  const details = error.issues
    .slice(0, max)
    .map((i) => shorten(`${i.path.length ? i.path.join('.') : '(value)'}: ${i.message.replace(/\.$/, '')}`, MAX_ISSUE_CHARS));
  if (error.issues.length > max) details.push(`and ${error.issues.length - max} more`);
  return details.join('; ');
}

