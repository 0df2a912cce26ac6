import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
// npm as a person runs it: on the system's Node (20 on these machines), not the bundled Node 24
// that npm test puts first on the PATH
const PATH = (process.env.PATH ?? '')
  .split(path.delimiter)
  .filter((dir) => !dir.includes(`node_modules${path.sep}.bin`))
  .join(path.delimiter);
const env = Object.fromEntries(
  Object.entries({ ...process.env, PATH }).filter(([name]) => !name.startsWith('npm_')),
) as NodeJS.ProcessEnv;
const systemNode = execFileSync('node', ['--version'], { env, encoding: 'utf8' }).trim();

// issue 30, item 8: `npm install` is quiet for a supported setup
describe(`npm install under the system's Node (${systemNode})`, () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'posthorn-npm-install-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('warns nothing: no EBADENGINE though the bundled Node 24 runs the scripts', () => {
    for (const file of ['package.json', 'package-lock.json', '.npmrc', 'tools/openapi-client/package.json']) {
      mkdirSync(path.dirname(path.join(scratch, file)), { recursive: true });
      copyFileSync(path.join(root, file), path.join(scratch, file));
    }
    const install = spawnSync(
      'npm',
      ['install', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund'],
      {
        cwd: scratch,
        env,
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    expect(install.status, install.stderr).toBe(0);
    expect(`${install.stdout}${install.stderr}`).not.toMatch(/EBADENGINE|npm warn/);
  }, 150_000);

  it("allows the embedded PostgreSQL's install script explicitly (package.json allowScripts)", () => {
    const listed = spawnSync('npm', ['install-scripts', 'ls'], {
      cwd: root,
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/No packages with unreviewed install scripts/);
  }, 90_000);
});
