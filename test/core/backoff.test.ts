import { describe, expect, test } from 'vitest';
import { backoffDelay, parseRetryAfter, retryDelay } from '../../src/core/backoff.js';

const options = { baseDelayMs: 100, maxDelayMs: 10_000 };

describe('backoffDelay', () => {
  test('attempt 1 waits between half the base delay and the base delay', () => {
    expect(backoffDelay(1, options, 0)).toBe(50);
    expect(backoffDelay(1, options, 0.5)).toBe(75);
    expect(backoffDelay(1, options, 0.999_999)).toBe(100);
  });

  test('the ceiling doubles with every attempt', () => {
    for (let attempt = 1; attempt <= 7; attempt++) {
      const ceiling = 100 * 2 ** (attempt - 1);
      expect(backoffDelay(attempt, options, 0)).toBe(ceiling / 2);
      expect(backoffDelay(attempt, options, 1)).toBe(ceiling);
    }
  });

  test('the ceiling stops at maxDelayMs', () => {
    expect(backoffDelay(20, options, 0)).toBe(5_000);
    expect(backoffDelay(20, options, 1)).toBe(10_000);
    expect(backoffDelay(1_000, options, 1)).toBe(10_000);
  });

  test('attempts below 1 are treated as the first', () => {
    expect(backoffDelay(0, options, 1)).toBe(100);
    expect(backoffDelay(-3, options, 0)).toBe(50);
  });

  test('every random draw gives a whole number of ms within [ceiling/2, ceiling], growing with the draw', () => {
    let previous = -1;
    for (let i = 0; i <= 100; i++) {
      const delay = backoffDelay(3, { baseDelayMs: 33, maxDelayMs: 10_000 }, i / 100);
      expect(Number.isInteger(delay)).toBe(true);
      expect(delay).toBeGreaterThanOrEqual(66);
      expect(delay).toBeLessThanOrEqual(132);
      expect(delay).toBeGreaterThanOrEqual(previous);
      previous = delay;
    }
  });

  test('a zero base delay means no wait', () => {
    expect(backoffDelay(5, { baseDelayMs: 0, maxDelayMs: 10_000 }, 0.7)).toBe(0);
  });
});

describe('retryDelay', () => {
  test('without a Retry-After the backoff is used', () => {
    expect(retryDelay(250, undefined, 60_000)).toBe(250);
  });

  test('a Retry-After longer than the backoff wins', () => {
    expect(retryDelay(250, 3_000, 60_000)).toBe(3_000);
  });

  test('a Retry-After shorter than the backoff does not shorten it', () => {
    expect(retryDelay(250, 0, 60_000)).toBe(250);
    expect(retryDelay(250, 100, 60_000)).toBe(250);
  });

  test('a Retry-After is capped, but never below the backoff', () => {
    expect(retryDelay(250, 3_600_000, 60_000)).toBe(60_000);
    expect(retryDelay(90_000, 3_600_000, 60_000)).toBe(90_000);
  });

  test('a Retry-After that is not a finite number is ignored', () => {
    expect(retryDelay(250, Number.NaN, 60_000)).toBe(250);
    expect(retryDelay(250, Number.POSITIVE_INFINITY, 60_000)).toBe(250);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 10, 30, 5, 41, 7);

  test('a missing or empty header gives undefined', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter('')).toBeUndefined();
  });

  test('delta-seconds become milliseconds', () => {
    expect(parseRetryAfter('0')).toBe(0);
    expect(parseRetryAfter('2')).toBe(2_000);
    expect(parseRetryAfter('120')).toBe(120_000);
    expect(parseRetryAfter('1.5')).toBe(1_500);
  });

  test('an HTTP date becomes the time left until it', () => {
    expect(parseRetryAfter(new Date(now + 30_000).toUTCString(), now)).toBe(30_000);
    expect(parseRetryAfter('Mon, 30 Nov 2026 05:42:07 GMT', now)).toBe(60_000);
  });

  test('an HTTP date in the past means no wait', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', now)).toBe(0);
  });

  test('garbage gives undefined', () => {
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('in a minute or two', now)).toBeUndefined();
  });

  test('numbers the HTTP grammar does not allow give undefined, not a surprise wait', () => {
    for (const header of [' ', '1e3', '0x10', '-1', 'abc 2099', 'Infinity']) {
      expect({ header, ms: parseRetryAfter(header, now) }).toEqual({ header, ms: undefined });
    }
  });
});
