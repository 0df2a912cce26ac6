import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Issue 48, build item 1: `posthorn contacts import file.csv --list …` with progress.

const root = path.resolve(import.meta.dirname, '../..');
let server: TestServer;
let dir: string;
let key: string;

function posthorn(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(root, 'bin/posthorn.js'), ...args],
      {
        cwd: root,
        env: {
          ...process.env,
          POSTHORN_CONFIG_DIR: dir,
          POSTHORN_API_KEY: key,
          POSTHORN_API_URL: `${server.url}/v1`,
        },
        timeout: 120_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

beforeAll(async () => {
  server = await startTestServer();
  const account = await server.signup();
  key = account.project_key.key;
  // the large file is past the free plan's 1,000 contacts
  await server.runtime.ctx.pool.query(
    `update workspaces set plan = 'unlimited' where id = (select workspace_id from projects where id = $1)`,
    [account.project.id],
  );
  dir = mkdtempSync(path.join(tmpdir(), 'posthorn-cli-import-'));
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('posthorn contacts import', () => {
  it('imports a Mailchimp export into a list named on the command line, creating it', async () => {
    const fixture = path.join(root, 'test/fixtures/imports/mailchimp-subscribed.csv');
    const res = await posthorn([
      'contacts',
      'import',
      fixture,
      '--list',
      'Newsletter',
      '--map',
      'NOTES=skip',
    ]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain(
      'Imported mailchimp-subscribed.csv: 3 rows, 3 created, 0 updated, 0 skipped.',
    );
    expect(res.stdout).toContain('Created the lists "Newsletter".');
    const lists = await server.call('GET', '/v1/lists', { key });
    const list = lists.body.data.find((l: { name: string }) => l.name === 'Newsletter');
    const members = await server.call('GET', `/v1/contacts?list=${list.id}`, { key });
    expect(members.body.total).toBe(3);
    const grace = await server.call('GET', '/v1/contacts/grace@example.com', { key });
    expect(grace.body.properties).not.toHaveProperty('NOTES');
    expect(grace.body.consent_history[0].text).toContain('"mailchimp-subscribed.csv"');

    // the same list by name again: found, not created twice; duplicates reported by line
    const csv = path.join(dir, 'again.csv');
    writeFileSync(csv, 'Email;City\nada@example.com;Paris\nADA@example.com;Rome\n');
    const again = await posthorn(['contacts', 'import', csv, '--list', 'Newsletter']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('1 updated, 1 skipped');
    expect(again.stdout).toContain('line 3: duplicate of line 2 (ada@example.com)');
    expect(again.stdout).not.toContain('Created the lists');
  });

  it('shows the progress of a large file and ends with its outcome', async () => {
    const rows = 50_000;
    const lines = ['email,first_name,last_name,plan,city,score'];
    for (let i = 0; i < rows; i++) lines.push(`big${i}@example.com,First${i},Last${i},pro,Oslo,${i % 100}`);
    const big = path.join(dir, 'big.csv');
    writeFileSync(big, `${lines.join('\n')}\n`);
    const res = await posthorn(['contacts', 'import', big]);
    expect(res.code, res.stderr).toBe(0);
    const progress = res.stderr.split('\n').filter((l) => / rows read: /.test(l));
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.at(-1)).toBe('50,000 of 50,000 rows read: 50,000 created, 0 updated, 0 skipped');
    expect(res.stdout).toContain('Imported big.csv: 50,000 rows, 50,000 created');
  });

  it('says what is wrong with a file or a mapping, exit code 1', async () => {
    const missing = await posthorn(['contacts', 'import', path.join(dir, 'nope.csv')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('cannot read');
    const noEmail = path.join(dir, 'no-email.csv');
    writeFileSync(noEmail, 'Name,Town\nAnn,Paris\n');
    const refused = await posthorn(['contacts', 'import', noEmail]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`The file's columns are "Name", "Town"`);
    const badMap = await posthorn(['contacts', 'import', noEmail, '--map', 'Name']);
    expect(badMap.code).toBe(1);
    expect(badMap.stderr).toContain('--map takes "Column=target"');
  });
});
