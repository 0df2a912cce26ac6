import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const root = path.resolve(import.meta.dirname, '../..');
let server: TestServer;
const dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-operator-'));
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

function posthorn(...args: string[]) {
  const result = spawnSync(process.execPath, ['src/main.ts', ...args], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: server.databaseUrl,
      POSTHORN_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
    },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('operator commands', () => {
  it('posthorn admin plan moves a workspace to a plan, and fails with a message and exit 1 otherwise', async () => {
    const { workspace, project_key } = await server.signup();
    const ok = posthorn('admin', 'plan', workspace.id, 'pro');
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/now on the pro plan/);
    const limits = await server.call('GET', '/v1/limits', { key: project_key.key });
    expect(limits.body.plan).toBe('pro');

    const unknownPlan = posthorn('admin', 'plan', workspace.id, 'gold');
    expect(unknownPlan.status).toBe(1);
    expect(unknownPlan.stderr).toMatch(/unknown plan "gold"/);
    const unknownWorkspace = posthorn('admin', 'plan', 'no-such-workspace', 'pro');
    expect(unknownWorkspace.status).toBe(1);
    expect(unknownWorkspace.stderr).toMatch(/Workspace not found/);
  });

  it('posthorn mailbox lists nothing when mail goes to a relay, and admin shared-domain prints the DKIM record', () => {
    const mailbox = posthorn('mailbox');
    expect(mailbox.status).toBe(0);
    expect(mailbox.stdout).toMatch(/dev mailbox is empty/);
    const records = posthorn('admin', 'shared-domain');
    expect(records.status).toBe(0);
    expect(records.stdout).toMatch(
      /TXT {2}posthorn1\._domainkey\.posthorn\.localhost {2}"v=DKIM1; k=rsa; p=/,
    );
  });
});
