import { randomUUID } from 'node:crypto';
import { InvalidIdError } from './errors.js';

/** Contract: ids are 1–128 characters from `A-Z a-z 0-9 . _ - :` (the HTTP schemas use it too). */
export const ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export function assertValidId(id: string): void {
  if (!ID_PATTERN.test(id)) throw new InvalidIdError(id);
}

export function generateId(): string {
  return randomUUID();
}
