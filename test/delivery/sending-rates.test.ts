import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { expectError } from '../helpers/assertions.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let account: SignupResult;
let key: string;

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
});
afterAll(() => server?.close());

describe("the project's sending rate", () => {
  it('has no limit until one is set; parts change independently and null clears one', async () => {
    expect((await server.call('GET', '/v1/me/sending-rate', { key })).body).toEqual({
      object: 'sending_rate',
      per_second: null,
      per_hour: null,
    });
    const set = await server.call('PATCH', '/v1/me/sending-rate', {
      key,
      body: { per_second: 20, per_hour: 10_000 },
    });
    expect(set.body).toEqual({ object: 'sending_rate', per_second: 20, per_hour: 10_000 });
    const cleared = await server.call('PATCH', '/v1/me/sending-rate', { key, body: { per_second: null } });
    expect(cleared.body).toEqual({ object: 'sending_rate', per_second: null, per_hour: 10_000 });
    expect((await server.call('GET', '/v1/me/sending-rate', { key })).body.per_hour).toBe(10_000);
  });

  it('refuses a rate that is not a whole number of at least one, and changes nothing', async () => {
    for (const body of [
      { per_second: 0 },
      { per_second: -5 },
      { per_second: 1.5 },
      { per_hour: 'fast' },
      [],
    ]) {
      expectError(await server.call('PATCH', '/v1/me/sending-rate', { key, body }), 400);
    }
    expect((await server.call('GET', '/v1/me/sending-rate', { key })).body.per_hour).toBe(10_000);
  });
});

describe("a sending domain's rate", () => {
  it('is shown on the domain and set with PATCH /domains/{id}', async () => {
    const added = await server.call('POST', '/v1/domains', { key, body: { domain: 'rates.example' } });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(added.body.rate).toEqual({ per_second: null, per_hour: null });
    const id = added.body.id;
    const set = await server.call('PATCH', `/v1/domains/${id}`, { key, body: { rate: { per_hour: 5000 } } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.rate).toEqual({ per_second: null, per_hour: 5000 });
    expect(set.body.inbound_enabled).toBe(false);
    expectError(
      await server.call('PATCH', `/v1/domains/${id}`, { key, body: { rate: { per_second: 0 } } }),
      400,
    );
    expect((await server.call('GET', `/v1/domains/${id}`, { key })).body.rate.per_hour).toBe(5000);
  });
});
