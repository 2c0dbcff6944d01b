import type { Hook } from '@hono/zod-openapi';
import type { ZodError } from 'zod';
import { InvalidIdError, InvalidInputError, type AgentsError } from '../../core/errors.js';
import { describeIssues } from '../../core/validation-issues.js';
import type { AppEnv } from '../env.js';

const WHERE: Record<string, string> = {
  json: 'request body',
  query: 'query parameters',
  param: 'path',
  header: 'headers',
};

/**
 * Turns a failed zod validation into the error family: an id anywhere (path, spawn or fork body)
 * is `invalid_id`, everything else `invalid_input`. Thrown, so error-handler.ts renders it.
 */
export const validationHook: Hook<unknown, AppEnv, string, undefined> = (result) => {
  if (result.success) return undefined;
  // @hono/zod-validator passes the value it validated beside the zod result.
  const data = (result as { data?: unknown }).data;
  throw toValidationError(result.target, result.error, data);
};

export function toValidationError(target: string, error: ZodError, data: unknown): AgentsError {
  const idIssue = error.issues.find((i) => i.path.length === 1 && i.path[0] === 'id');
  if (idIssue && (target === 'param' || target === 'json')) {
    const value = data && typeof data === 'object' ? (data as { id?: unknown }).id : undefined;
    return new InvalidIdError(typeof value === 'string' ? value : JSON.stringify(value) ?? 'nothing');
  }
  return new InvalidInputError(`Invalid ${WHERE[target] ?? target}: ${describeIssues(error)}.`);
}
