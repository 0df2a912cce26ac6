import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Issue 48, build item 1: contacts imported as people have them (headers in any case and spacing,
// comma, semicolon or tab, a byte-order mark), duplicates reported by line, consent recorded as
// the import's, and the API's mapping and lists.

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await startTestServer();
  key = (await server.signup()).project_key.key;
});
afterAll(() => server?.close());

async function upload(body: string | Buffer, query: Record<string, string> = {}, k = key) {
  const res = await fetch(`${server.url}/v1/contacts/import?${new URLSearchParams(query)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${k}`, 'content-type': 'text/csv' },
    body,
  });
  return { status: res.status, body: (await res.json()) as any };
}

function finished(id: string) {
  return eventually(
    async () => {
      const res = await server.call('GET', `/v1/imports/${id}`, { key });
      if (res.body.status !== 'completed' && res.body.status !== 'failed')
        throw new Error(`last: ${JSON.stringify(res.body)}`);
      return res.body;
    },
    { timeoutMs: 20_000, intervalMs: 100, message: `import ${id} did not finish` },
  );
}

async function imported(body: string | Buffer, query: Record<string, string> = {}) {
  const started = await upload(body, query);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const done = await finished(started.body.id);
  expect(done.status, JSON.stringify(done)).toBe('completed');
  return done;
}

const contact = async (email: string) => (await server.call('GET', `/v1/contacts/${email}`, { key })).body;

describe('importing contacts as people have them', () => {
  it('matches headers without regard to case or spacing, with the usual names', async () => {
    const done = await imported(
      'E-Mail,First Name,LAST_NAME,Phone Number,Plan\r\ncase@example.com,Cara,Case,+33 1,pro\r\n',
    );
    expect(done).toMatchObject({ created: 1, error_count: 0 });
    expect(await contact('case@example.com')).toMatchObject({
      first_name: 'Cara',
      last_name: 'Case',
      properties: { phone_number: '+33 1', Plan: 'pro' },
    });
  });

  it('detects a semicolon or a tab and ignores a byte-order mark', async () => {
    const semi = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('Email Address;First Name;City\nsemi@example.com;Sam;"Oslo; Norway"\n'),
    ]);
    expect(await imported(semi)).toMatchObject({ created: 1, error_count: 0 });
    expect(await contact('semi@example.com')).toMatchObject({
      first_name: 'Sam',
      properties: { City: 'Oslo; Norway' },
    });
    expect(await imported('\uFEFFemail\tname\ntab@example.com\tTina Tab Taylor\n')).toMatchObject({
      created: 1,
    });
    expect(await contact('tab@example.com')).toMatchObject({ first_name: 'Tina', last_name: 'Tab Taylor' });
  });

  it('names the columns it found when none holds the address, storing nothing', async () => {
    const before = (await server.runtime.ctx.pool.query('select count(*) from imports')).rows[0].count;
    expectError(
      await upload('Nom;Adresse;Ville\nAnn;ann@example.com;Paris\n'),
      400,
      /No column holds the email address\. The file's columns are "Nom", "Adresse", "Ville": name the email column in the mapping/,
    );
    expectError(
      await upload('Email,E-mail\na@example.com,b@example.com\n'),
      400,
      /"Email" and "E-mail" both go to email/,
    );
    expect((await server.runtime.ctx.pool.query('select count(*) from imports')).rows[0].count).toBe(before);
  });

  it('a Status column read as the subscription says which column to map otherwise when a value is no subscription', async () => {
    const done = await imported('Email,Status\nst1@example.com,unsubscribed\nst2@example.com,Lead\n');
    expect(done).toMatchObject({ created: 1, error_count: 1 });
    expect(done.errors).toEqual([
      {
        row: 3,
        error: expect.stringMatching(/got "Lead" in the column "Status": map it to a property or skip it/),
      },
    ]);
    expect((await contact('st1@example.com')).subscribed).toBe(false);
    // mapped to a property, the same file imports whole
    const mapped = await imported('Email,Status\nst2@example.com,Lead\n', { mapping: '{"Status":"status"}' });
    expect(mapped).toMatchObject({ created: 1, error_count: 0 });
    expect((await contact('st2@example.com')).properties).toEqual({ status: 'Lead' });
  });

  it('reports a duplicate within the file by line and keeps the first row', async () => {
    const done = await imported(
      [
        'email,city',
        'dup@example.com,Berlin',
        'other@example.com,Rome',
        'DUP@example.com,Oslo',
        'dup@example.com ,Lima',
        '',
      ].join('\n'),
    );
    expect(done).toMatchObject({ created: 2, updated: 0, skipped: 2, error_count: 2 });
    expect(done.errors).toEqual([
      { row: 4, error: expect.stringMatching(/^duplicate of line 2 \(dup@example\.com\)/) },
      { row: 5, error: expect.stringMatching(/^duplicate of line 2 /) },
    ]);
    expect((await contact('dup@example.com')).properties).toEqual({ city: 'Berlin' });
  });

  it("records each imported contact's consent as the import: when, by whom, which file", async () => {
    const started = await upload('email\nconsent@example.com\n', { filename: 'members.csv' });
    expect(started.body).toMatchObject({
      filename: 'members.csv',
      created_by: expect.stringMatching(/^the API key "/),
    });
    await finished(started.body.id);
    const history = (await contact('consent@example.com')).consent_history;
    expect(history).toEqual([
      {
        status: 'granted',
        source: 'import',
        ip: null,
        text: expect.stringMatching(
          /^Imported from "members\.csv" by the API key ".+" \(import [0-9a-f-]{36}\)$/,
        ),
        topic_id: null,
        created_at: expect.any(String),
      },
    ]);
  });

  it('takes a mapping of columns and adds the contacts to lists', async () => {
    const list = await server.call('POST', '/v1/lists', { key, body: { name: 'Imported' } });
    const other = await server.call('POST', '/v1/lists', { key, body: { name: 'Also' } });
    const csv = 'Courriel;Prénom;Code;Notes\nmap@example.com;Marie;75001;hello\n';
    const mapping = { Courriel: 'email', prénom: 'first_name', Code: 'property:zip', Notes: 'skip' };
    const done = await imported(csv, {
      mapping: JSON.stringify(mapping),
      list_ids: `${list.body.id},${other.body.id}`,
    });
    expect(done).toMatchObject({ created: 1, mapping, list_ids: [list.body.id, other.body.id] });
    const mapped = await contact('map@example.com');
    expect(mapped).toMatchObject({ first_name: 'Marie', properties: { zip: '75001' } });
    expect(mapped.properties).not.toHaveProperty('Notes');
    for (const id of [list.body.id, other.body.id]) {
      const members = await server.call('GET', `/v1/contacts?list=${id}`, { key });
      expect(members.body.data.map((c: { email: string }) => c.email)).toEqual(['map@example.com']);
    }
    // a contact already known joins the lists too
    await imported('email\ncase@example.com\n', { list_ids: list.body.id });
    const members = await server.call('GET', `/v1/contacts?list=${list.body.id}`, { key });
    expect(members.body.data.map((c: { email: string }) => c.email).sort()).toEqual([
      'case@example.com',
      'map@example.com',
    ]);
  });

  it('refuses a bad mapping or an unknown list, storing nothing', async () => {
    const before = (await server.runtime.ctx.pool.query('select count(*) from imports')).rows[0].count;
    const csv = 'email,city\nbad@example.com,Paris\n';
    expectError(await upload(csv, { mapping: '{nope' }), 400, /mapping must be a JSON object/);
    expectError(await upload(csv, { mapping: '["email"]' }), 400, /mapping must be an object/);
    expectError(
      await upload(csv, { mapping: '{"Town":"skip"}' }),
      400,
      /The mapping names "Town", which is not a column of the file \(its columns: "email", "city"\)/,
    );
    expectError(await upload(csv, { mapping: '{"email":"skip"}' }), 400, /No column holds the email address/);
    expectError(
      await upload(csv, { list_ids: '00000000-0000-4000-8000-000000000000' }),
      400,
      /No list "00000000-0000-4000-8000-000000000000" in this project/,
    );
    expectError(await upload(csv, { list_ids: 'not-a-list' }), 400, /No list "not-a-list"/);
    expectError(
      await server.call('POST', `/v1/contacts/import?mapping=${encodeURIComponent('{"a":"email"}')}`, {
        key,
        body: [{ email: 'json@example.com' }],
      }),
      400,
      /A mapping applies to a CSV file/,
    );
    expect((await server.runtime.ctx.pool.query('select count(*) from imports')).rows[0].count).toBe(before);
  });

  it('previews the columns and first rows of a file, storing nothing', async () => {
    const before = (await server.runtime.ctx.pool.query('select count(*) from imports')).rows[0].count;
    const preview = async (body: string) => {
      const res = await fetch(`${server.url}/v1/contacts/import/preview`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
        body,
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const sample =
      '\uFEFFEmail Address;First Name;MEMBER_RATING;Phone Number;\nann@example.com;Ann;4;+33;\nbob@exa';
    const res = await preview(sample);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      object: 'import_preview',
      delimiter: 'semicolon',
      columns: [
        { name: 'Email Address', target: 'email' },
        { name: 'First Name', target: 'first_name' },
        { name: 'MEMBER_RATING', target: 'property:MEMBER_RATING' },
        { name: 'Phone Number', target: 'property:phone_number' },
        { name: '', target: 'skip' },
      ],
      // the last line, cut short by the sample's end, is left out
      rows: [['ann@example.com', 'Ann', '4', '+33', '']],
    });
    // no email column is no error here: the mapping step names it
    expect((await preview('Nom,Courriel\nAnn,ann@example.com\n')).body.columns).toEqual([
      { name: 'Nom', target: 'property:Nom' },
      { name: 'Courriel', target: 'property:Courriel' },
    ]);
    expectError(await preview(''), 400, /empty/);
    expect((await server.runtime.ctx.pool.query('select count(*) from imports')).rows[0].count).toBe(before);
  });
});
