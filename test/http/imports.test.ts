import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let account: SignupResult;
let key: string;

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signup();
  key = account.project_key.key;
});
afterAll(() => server?.close());

async function upload(body: string, contentType: string, k = key) {
  const res = await fetch(`${server.url}/v1/contacts/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${k}`, 'content-type': contentType },
    body,
  });
  return { status: res.status, body: (await res.json()) as any };
}

function finished(id: string, k = key) {
  return eventually(
    async () => {
      const res = await server.call('GET', `/v1/imports/${id}`, { key: k });
      if (res.body.status !== 'completed' && res.body.status !== 'failed')
        throw new Error(`last: ${JSON.stringify(res.body)}`);
      return res.body;
    },
    { timeoutMs: 20_000, intervalMs: 100, message: `import ${id} did not finish` },
  );
}

const CSV = [
  'email,first_name,last_name,subscribed,plan,city',
  'one@example.com,One,First,true,pro,Paris',
  'not-an-email,Bad,Row,true,free,Rome',
  '"two@example.com","Two, with a comma",Second,no,free,',
  'three@example.com,Three,Third,maybe,team,Oslo',
  'four@example.com,Four,Fourth,yes,team',
  'FIVE@Example.com,Five,"Quoted ""name""",,pro,Lima',
  '',
].join('\r\n');

describe('contact import', () => {
  it('imports the good rows of a CSV, reports the bad ones by line, and a re-run creates no duplicates', async () => {
    const started = await upload(CSV, 'text/csv');
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body).toMatchObject({ object: 'import', format: 'csv', status: 'queued' });
    const done = await finished(started.body.id);
    expect(done).toMatchObject({
      status: 'completed',
      total: 6,
      processed: 6,
      created: 3,
      updated: 0,
      skipped: 3,
      error_count: 3,
    });
    expect(done.errors).toEqual([
      { row: 3, error: expect.stringContaining('valid email address') },
      { row: 5, error: expect.stringContaining('subscribed must be true or false') },
      { row: 6, error: expect.stringContaining('expected 6 columns, got 5') },
    ]);

    const two = await server.call('GET', '/v1/contacts/two@example.com', { key });
    expect(two.body).toMatchObject({
      first_name: 'Two, with a comma',
      last_name: 'Second',
      subscribed: false,
      properties: { plan: 'free' },
    });
    const five = await server.call('GET', '/v1/contacts/five@example.com', { key });
    expect(five.body).toMatchObject({
      last_name: 'Quoted "name"',
      subscribed: true,
      properties: { plan: 'pro', city: 'Lima' },
    });

    // a subscription the file states is kept as consent history (source "import"); a contact the
    // file creates without one is recorded as subscribed by this import (issue 48: which file, by whom)
    expect(two.body.consent_history).toEqual([
      expect.objectContaining({ status: 'withdrawn', source: 'import' }),
    ]);
    expect(five.body.consent_history).toEqual([
      expect.objectContaining({
        status: 'granted',
        source: 'import',
        text: expect.stringContaining(`import ${started.body.id}`),
      }),
    ]);

    const again = await finished((await upload(CSV, 'text/csv')).body.id);
    expect(again).toMatchObject({ status: 'completed', created: 0, updated: 3, skipped: 3 });
    const all = await server.call('GET', '/v1/contacts?limit=100', { key });
    expect(all.body.total).toBe(3);
    // the same subscription again is no change: no second record
    const twoAgain = await server.call('GET', '/v1/contacts/two@example.com', { key });
    expect(twoAgain.body.consent_history).toHaveLength(1);
    // a change of subscription in a later file is recorded
    await finished((await upload('email,subscribed\ntwo@example.com,yes\n', 'text/csv')).body.id);
    const resubscribed = await server.call('GET', '/v1/contacts/two@example.com', { key });
    expect(resubscribed.body.subscribed).toBe(true);
    expect(resubscribed.body.consent_history.map((c: { status: string }) => c.status)).toEqual([
      'withdrawn',
      'granted',
    ]);
  });

  it('imports a JSON array, updating existing contacts and merging their properties', async () => {
    const res = await server.call('POST', '/v1/contacts/import', {
      key,
      body: [
        { email: 'one@example.com', properties: { seats: 4 } },
        { email: 'json@example.com', first_name: 'Jay', properties: { plan: 'team' } },
        { email: 'json-bad@example.com', properties: 'nope' },
      ],
    });
    expect(res.status).toBe(200);
    const done = await finished(res.body.id);
    expect(done).toMatchObject({ status: 'completed', created: 1, updated: 1, skipped: 1 });
    expect(done.errors).toEqual([
      { row: 3, error: expect.stringContaining('`properties` must be an object') },
    ]);
    const one = await server.call('GET', '/v1/contacts/one@example.com', { key });
    expect(one.body.properties).toEqual({ plan: 'pro', city: 'Paris', seats: 4 });
    expect(one.body.first_name).toBe('One');
  });

  it('takes {"contacts": [...]} as JSON, and CSV as application/csv or with a charset', async () => {
    const wrapped = await server.call('POST', '/v1/contacts/import', {
      key,
      body: { contacts: [{ email: 'wrapped@example.com', first_name: 'Wren' }] },
    });
    expect(wrapped.status, JSON.stringify(wrapped.body)).toBe(200);
    expect(wrapped.body.format).toBe('json');
    const csv = await upload('email\r\napp-csv@example.com\r\n', 'application/csv');
    const charset = await upload('email\r\ncharset@example.com\r\n', 'text/csv; charset=utf-8');
    for (const started of [csv, charset]) {
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      expect(started.body.format).toBe('csv');
    }
    for (const id of [wrapped.body.id, csv.body.id, charset.body.id])
      expect(await finished(id)).toMatchObject({ status: 'completed', created: 1 });
    const wren = await server.call('GET', '/v1/contacts/wrapped@example.com', { key });
    expect(wren.body.first_name).toBe('Wren');
  });

  it('refuses an unusable upload at once, storing nothing', async () => {
    const before = (await server.runtime.ctx.pool.query('select count(*) from imports')).rows[0].count;
    // no email column: the error names the columns found (issue 48)
    expectError(
      await upload('name,city\r\nAnn,Paris\r\n', 'text/csv'),
      400,
      /No column holds the email address. The file's columns are "name", "city"/,
    );
    // a header that is no property name becomes one (bad_column); a mapping's target must be one
    expectError(
      await fetch(
        `${server.url}/v1/contacts/import?mapping=${encodeURIComponent('{"city":"bad column!"}')}`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
          body: 'email,city\r\nx@example.com,1\r\n',
        },
      ).then(async (r) => ({ status: r.status, body: await r.json() })),
      400,
      /mapping of "city" must be a contact field/,
    );
    expectError(await upload('', 'text/csv'), 400, /empty/);
    expectError(
      await server.call('POST', '/v1/contacts/import', { key, body: [] }),
      400,
      /non-empty JSON array/,
    );
    expectError(
      await server.call('POST', '/v1/contacts/import', { key, body: { rows: 1 } }),
      400,
      /`contacts` is required/,
    );
    expectError(
      await server.call('POST', '/v1/contacts/import', { key, body: { contacts: 'x' } }),
      400,
      /`contacts` must be an array/,
    );
    const plain = await upload('email\r\nx@example.com\r\n', 'text/plain');
    expect(plain.status).toBe(415);
    expect((await server.runtime.ctx.pool.query('select count(*) from imports')).rows[0].count).toBe(before);
  });

  it('stops creating at the plan limit, naming the rows it skipped', async () => {
    const small = await server.signup();
    await server.runtime.ctx.pool.query(
      `insert into contacts (project_id, email) select $1, 'held' || g || '@example.com' from generate_series(1, 998) g`,
      [small.project.id],
    );
    const csv = [
      'email',
      'held1@example.com',
      'n1@example.com',
      'n2@example.com',
      'n3@example.com',
      'n4@example.com',
      '',
    ].join('\n');
    const res = await upload(csv, 'text/csv', small.project_key.key);
    const done = await finished(res.body.id, small.project_key.key);
    expect(done).toMatchObject({ status: 'completed', created: 2, updated: 1, skipped: 2 });
    expect(done.errors).toEqual([
      { row: 5, error: expect.stringContaining('limit of 1000 contacts') },
      { row: 6, error: expect.stringContaining('limit of 1000 contacts') },
    ]);
    const limits = await server.call('GET', '/v1/limits', { key: small.project_key.key });
    expect(limits.body.contacts).toEqual({ count: 1000, limit: 1000 });
  });

  it('a NUL character in a cell is a row error, not a failed import', async () => {
    const res = await upload('email,city\nnul1@example.com,Pa\u0000ris\nnul2@example.com,Rome\n', 'text/csv');
    expect(res.status).toBe(200);
    const done = await finished(res.body.id);
    expect(done).toMatchObject({ status: 'completed', created: 1, skipped: 1 });
    expect(done.errors).toEqual([{ row: 2, error: expect.stringContaining('NUL') }]);
  });

  it("another project's import is 404", async () => {
    const res = await upload('email\r\nsolo@example.com\r\n', 'text/csv');
    const other = await server.signup();
    expectError(await server.call('GET', `/v1/imports/${res.body.id}`, { key: other.project_key.key }), 404);
    expectError(await server.call('GET', '/v1/imports/nope', { key }), 404);
  });
});
