import { expect } from 'vitest';
import type { TestServer } from './server.ts';
import { codeIn } from './smtp-sink.ts';

/** A dashboard session: its token also acts on /v1 as a bearer; csrf goes with cookie calls. */
export interface Session {
  token: string;
  csrf: string;
}

/**
 * Signs in through the dashboard's code sign-in: asks for a code, reads it from the sink (waiting up
 * to `timeoutMs` for it), verifies it.
 */
export async function signInByCode(server: TestServer, email: string, timeoutMs = 15_000): Promise<Session> {
  const since = server.sink.messages.length;
  expect((await server.call('POST', '/api/auth/login', { body: { email } })).status).toBe(200);
  const message = await server.sink.waitFor(
    (m) =>
      m.to.includes(email) &&
      /login code/i.test(m.parsed.subject ?? '') &&
      server.sink.messages.indexOf(m) >= since,
    timeoutMs,
  );
  const res = await server.call('POST', '/api/auth/login/verify', { body: { email, code: codeIn(message) } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { token: res.body.token, csrf: res.body.csrf_token };
}
