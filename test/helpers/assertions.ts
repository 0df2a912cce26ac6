import { expect } from 'vitest';

/**
 * A failure: the status, and a body that is exactly {error: string} (optionally matching); a 429
 * also carries its `code`, `rate_limited` or `daily_limit`, which tells the two limits apart.
 */
export function expectError(res: { status: number; body: any }, status: number, message?: RegExp) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(Object.keys(res.body ?? {})).toEqual(status === 429 ? ['error', 'code'] : ['error']);
  if (status === 429) expect(['rate_limited', 'daily_limit']).toContain(res.body.code);
  expect(typeof res.body.error).toBe('string');
  expect(res.body.error.length).toBeGreaterThan(0);
  if (message) expect(res.body.error).toMatch(message);
}

/** A call with a project key that must answer 200: its body (the failure names the call and shows the body). */
export async function okCall(
  server: {
    call(
      method: string,
      path: string,
      opts: { key?: string; body?: unknown },
    ): Promise<{ status: number; body: any }>;
  },
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<any> {
  const res = await server.call(method, path, { key, body });
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body;
}
