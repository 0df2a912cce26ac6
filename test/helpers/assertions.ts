import { expect } from 'vitest';

/** A failure: the status, and a body that is exactly {error: string} (optionally matching). */
export function expectError(res: { status: number; body: any }, status: number, message?: RegExp) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(Object.keys(res.body ?? {})).toEqual(['error']);
  expect(typeof res.body.error).toBe('string');
  expect(res.body.error.length).toBeGreaterThan(0);
  if (message) expect(res.body.error).toMatch(message);
}
