import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A project's time zone and quiet hours (issue 50, build item 4): GET/PATCH /v1/me/local-time, the
 * zone of contacts who name none and the local hours marketing and automation mail waits out.
 */

let server: TestServer;
let account: SignupResult;
let key: string;

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  key = account.project_key.key;
});
afterAll(async () => {
  await server?.close();
});

describe('local time settings', () => {
  it('start in UTC with no quiet hours, and keep what is set', async () => {
    expect((await server.call('GET', '/v1/me/local-time', { key })).body).toEqual({
      object: 'local_time',
      time_zone: 'UTC',
      quiet_hours: null,
    });
    const set = await server.call('PATCH', '/v1/me/local-time', {
      key,
      body: { time_zone: 'Europe/Berlin', quiet_hours: { from: '21:00', to: '08:00' } },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    // a change of one leaves the other
    await server.call('PATCH', '/v1/me/local-time', { key, body: { time_zone: 'America/New_York' } });
    expect((await server.call('GET', '/v1/me/local-time', { key })).body).toMatchObject({
      time_zone: 'America/New_York',
      quiet_hours: { from: '21:00', to: '08:00' },
    });
    await server.call('PATCH', '/v1/me/local-time', { key, body: { quiet_hours: null } });
    expect((await server.call('GET', '/v1/me/local-time', { key })).body.quiet_hours).toBeNull();
  });

  it('refuse what is not a zone or a time, and change nothing', async () => {
    const bad = [
      { time_zone: 'Mars/Olympus' },
      { quiet_hours: { from: '9pm', to: '08:00' } },
      { quiet_hours: { from: '21:00' } },
      { quiet_hours: { from: '08:00', to: '08:00' } },
      { time_zone: 'UTC', quiet_hours: { from: '25:00', to: '08:00' } },
    ];
    const before = (await server.call('GET', '/v1/me/local-time', { key })).body;
    for (const body of bad) expectError(await server.call('PATCH', '/v1/me/local-time', { key, body }), 400);
    expect((await server.call('GET', '/v1/me/local-time', { key })).body).toEqual(before);
  });
});
