import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

// Issue 48, import speed with memory bounded: a CSV file is stored in pieces of 1 MiB as it arrives
// and read back a piece at a time, two batches written at a time on a plan without a contact
// limit. What people see stays the same: every row imported once, duplicates reported by the line
// of the address's first row wherever the two rows fall, progress as "n of total" from the start.

let server: TestServer;
let account: SignupResult;
let key: string;

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signup();
  key = account.project_key.key;
  await server.runtime.ctx.pool.query(`update workspaces set plan = 'unlimited' where id = $1`, [
    account.workspace.id,
  ]);
});
afterAll(() => server?.close());

function finished(id: string) {
  return eventually(
    async () => {
      const res = await server.call('GET', `/v1/imports/${id}`, { key });
      if (res.body.status !== 'completed' && res.body.status !== 'failed')
        throw new Error(`last: ${JSON.stringify(res.body)}`);
      return res.body;
    },
    { timeoutMs: 60_000, intervalMs: 200, message: `import ${id} did not finish` },
  );
}

describe('a CSV import larger than one piece', () => {
  it('imports every row once, reports duplicates across pieces and batches by line, and drops its pieces', async () => {
    const rows = 40_000;
    const lines = ['\uFEFFEmail Address;First Name;City'];
    for (let i = 0; i < rows; i++)
      lines.push(`Person${i}@Example.com;Name ${i};"Town; ${'x'.repeat(i % 40)}"`);
    // duplicates of line 2 (the first row) and of the 25,000th row, in later pieces and batches
    lines.push('person0@example.com;Again;Paris', 'PERSON24999@example.com;Again;Rome');
    const csv = `${lines.join('\r\n')}\r\n`;
    expect(Buffer.byteLength(csv)).toBeGreaterThan(2 * 1024 * 1024);
    const list = await server.call('POST', '/v1/lists', { key, body: { name: 'Streamed' } });
    expect(list.status).toBe(200);
    const res = await fetch(`${server.url}/v1/contacts/import?filename=big.csv&list_ids=${list.body.id}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
      body: csv,
    });
    const started = (await res.json()) as any;
    expect(res.status, JSON.stringify(started)).toBe(200);
    // the total is known from the upload: progress reads "n of total" from the start
    expect(started).toMatchObject({ status: 'queued', total: rows + 2 });
    const done = await finished(started.id);
    expect(done).toMatchObject({
      status: 'completed',
      total: rows + 2,
      processed: rows + 2,
      created: rows,
      skipped: 2,
      error_count: 2,
    });
    expect(done.errors).toEqual([
      { row: rows + 2, error: expect.stringContaining('duplicate of line 2 (person0@example.com)') },
      { row: rows + 3, error: expect.stringContaining('duplicate of line 25001 (person24999@example.com)') },
    ]);
    const one = await server.call('GET', '/v1/contacts/person24999@example.com', { key });
    expect(one.body).toMatchObject({
      first_name: 'Name 24999',
      properties: { City: `Town; ${'x'.repeat(24999 % 40)}` },
    });
    const members = await server.call('GET', `/v1/lists/${list.body.id}`, { key });
    expect(members.body.member_count).toBe(rows);
    const { rows: consents } = await server.runtime.ctx.pool.query(
      `select count(*)::int as n from contact_consents where project_id = $1 and source = 'import' and text_shown like $2`,
      [account.project.id, `Imported from "big.csv"%`],
    );
    expect(consents[0].n).toBe(rows);
    const { rows: left } = await server.runtime.ctx.pool.query(
      'select count(*)::int as n from import_chunks where import_id = $1',
      [started.id],
    );
    expect(left[0].n).toBe(0);
  });

  it('refuses a file whose header has no email column before storing any of it', async () => {
    const csv = `Name;City\r\n${'Someone;Somewhere\r\n'.repeat(100_000)}`;
    const res = await fetch(`${server.url}/v1/contacts/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
      body: csv,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toMatch(/No column holds the email address/);
    const { rows } = await server.runtime.ctx.pool.query(
      'select count(*)::int as n from import_chunks c join imports i on i.id = c.import_id where i.project_id = $1',
      [account.project.id],
    );
    expect(rows[0].n).toBe(0);
  });

  it('refuses a preview over its limit, declared or not, with a 413', async () => {
    const big = `email\n${'someone@example.com\n'.repeat(60_000)}`;
    const declared = await fetch(`${server.url}/v1/contacts/import/preview`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
      body: big,
    });
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as any).error).toMatch(
      /too large for POST \/v1\/contacts\/import\/preview/,
    );
    // sent in pieces without a length: counted as it arrives
    const bytes = new TextEncoder().encode(big);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 64 * 1024)
          controller.enqueue(bytes.subarray(at, at + 64 * 1024));
        controller.close();
      },
    });
    const chunked = await fetch(`${server.url}/v1/contacts/import/preview`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    const ok = await server.call('GET', '/v1/contacts?limit=1', { key });
    expect(ok.status).toBe(200);
  });

  it('answers CSV sent to a contact route other than the import with a 415', async () => {
    const res = await fetch(`${server.url}/v1/contacts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
      body: 'email\nsomeone@example.com\n',
    });
    expect(res.status).toBe(415);
    expect(((await res.json()) as any).error).toMatch(/application\/json/);
  });
});
