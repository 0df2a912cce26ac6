import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.ts';
import { eventually } from '../helpers/eventually.ts';
import { stopNpmStart } from '../helpers/npm-start.ts';

// The README's quick start and its marked CLI session, run as written (issue 30, item 8). What the
// test changes: the port (a free one, for a shared machine: http://localhost:3000 becomes it), the
// data and credentials folders (temporary), `npm install` (done: this run uses its node_modules),
// and each `<name>` placeholder, which is the value an earlier command printed.

const root = path.resolve(import.meta.dirname, '../..');
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');

/** The lines of the fenced sh block after `marker` (or the first sh block after a heading). */
function shBlockAfter(marker: string): string[] {
  const at = readme.indexOf(marker);
  if (at < 0) throw new Error(`README has no "${marker}"`);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  if (!block) throw new Error(`README has no sh block after "${marker}"`);
  return block[1].split('\n').filter((line) => line.trim() !== '');
}

type Values = Record<string, string>;
interface Answer {
  code: number | null;
  stdout: string;
  stderr: string;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

/** What each README command must answer, and the values it gives the commands after it. */
const checks: [RegExp, (out: string, values: Values) => void][] = [
  [
    /^npx posthorn signup /,
    (out, values) => {
      expect(out).toMatch(/Account created for you@example\.com/);
      values.project_id = (new RegExp(`\\((${UUID.source})\\)`).exec(out) ?? [])[1] ?? '';
      expect(values.project_id).toMatch(UUID);
    },
  ],
  [
    /^npx posthorn mailbox$/,
    (out, values) => {
      const line = out.split('\n').find((l) => l.includes('you@example.com'));
      expect(line, out).toBeDefined();
      values.mailbox_id = (UUID.exec(line as string) ?? [])[0] ?? '';
    },
  ],
  [
    /^npx posthorn mailbox \S+$/,
    (out, values) => {
      // printed decoded: no quoted-printable soft line break cuts the code
      values.code = (/code(?: is)?: ([A-Z0-9]{6})/.exec(out) ?? [])[1] ?? '';
      expect(values.code, 'the six-character code in the signup email').toMatch(/^[A-Z0-9]{6}$/);
    },
  ],
  [/^npx posthorn verify-email /, (out) => expect(out).toMatch(/Email confirmed/)],
  [/^npx posthorn whoami$/, (out) => expect(out).toMatch(/Can send\s+yes/)],
  [
    /^npx posthorn workspaces list$/,
    (out) => {
      expect(out).toMatch(/^ID\s+NAME\s+PLAN\s+ROLE/);
      expect(out).toMatch(/unlimited/); // POSTHORN_DEFAULT_PLAN unset
    },
  ],
  [/^npx posthorn keys list /, (out) => expect(out).toMatch(/^ID\s+NAME\s+SCOPE\s+STATUS\s+PREFIX/)],
  [
    /^npx posthorn send /,
    (out, values) => {
      expect(out).toMatch(/^Accepted: /);
      values.email_id = (UUID.exec(out) ?? [])[0] ?? '';
    },
  ],
  [/^npx posthorn emails list$/, (out, values) => expect(out).toContain(values.email_id)],
  [
    /^npx posthorn emails get /,
    (out, values) => {
      expect(out).toContain(values.email_id);
      expect(out).toMatch(/Timeline:\n.*TIME\s+EVENT/);
      expect(out).toMatch(/\squeued\s/);
    },
  ],
  [/^npx posthorn domains add example\.com$/, (out) => expect(out).toMatch(/example\.com/)],
  [/^npx posthorn logout --revoke$/, () => {}],
];

describe("the README's quick start and CLI session", () => {
  let dataDir: string;
  let configDir: string;
  let port: number;
  let child: ChildProcess | undefined;
  let output = '';

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-readme-data-'));
    configDir = mkdtempSync(path.join(tmpdir(), 'posthorn-readme-config-'));
    port = await freePort();
  });

  afterAll(async () => {
    if (child) await stopNpmStart(child, 45_000);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(configDir, { recursive: true, force: true });
  }, 60_000);

  /** The environment of a person's shell: none of this run's settings, and this test's folders. */
  function env(): NodeJS.ProcessEnv {
    const clean: NodeJS.ProcessEnv = {};
    for (const [name, value] of Object.entries(process.env))
      if (!/^(VITEST|POSTHORN_|TEST_DATABASE_URL$|DATABASE_URL$|NODE_ENV$|PORT$)/.test(name))
        clean[name] = value;
    return { ...clean, POSTHORN_DATA_DIR: dataDir, POSTHORN_CONFIG_DIR: configDir, NO_COLOR: '1' };
  }

  it('npm install && npm start: the server says where the dashboard, the API and the mail are', async () => {
    const quickStart = shBlockAfter('## Quick start');
    expect(quickStart).toEqual(['npm install && npm start']);
    child = spawn('npm', ['start'], {
      cwd: root,
      env: {
        ...env(),
        PORT: String(port),
        POSTHORN_SMTP_PORT: String(await freePort()),
        POSTHORN_MX_PORT: String(await freePort()),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: the cleanup stops the program under npm, not only npm
    });
    child.stdout?.on('data', (d) => (output += d));
    child.stderr?.on('data', (d) => (output += d));
    await eventually(
      () => {
        if (child?.exitCode !== null) throw new Error(`npm start exited (${child?.exitCode})`);
        expect(output).toContain('Posthorn is running');
      },
      { timeoutMs: 120_000, intervalMs: 200, message: 'npm start did not say it is running' },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${output}`);
    });
    expect(output).toContain(`http://127.0.0.1:${port}/v1/docs`);
    expect(output).toContain(`Dashboard:  http://localhost:${port}/`);
    expect(output).toContain('npx posthorn mailbox');
  }, 150_000);

  it('runs each command of the marked CLI block in order, and each answers as the README says', () => {
    const lines = shBlockAfter('<!-- readme-test: cli -->');
    expect(lines.length).toBeGreaterThan(5);
    const values: Values = {};
    for (const line of lines) {
      const written = line.replace(/\s+#.*$/, '').trim();
      const check = checks.find(([pattern]) => pattern.test(written));
      if (!check) throw new Error(`no check for the README's command "${written}": add one to this test`);
      const command = written
        .replaceAll('http://localhost:3000', `http://localhost:${port}`)
        .replace(/<(\w+)>/g, (_, name: string) => {
          if (!values[name]) throw new Error(`"${written}": no earlier command printed <${name}>`);
          return values[name];
        });
      const run = spawnSync('sh', ['-c', command], {
        cwd: root,
        env: env(),
        encoding: 'utf8',
        timeout: 60_000,
      });
      const answer: Answer = { code: run.status, stdout: run.stdout, stderr: run.stderr };
      expect(answer.code, `${command}\n${answer.stdout}\n${answer.stderr}`).toBe(0);
      try {
        check[1](answer.stdout, values);
      } catch (err) {
        throw new Error(
          `${command} answered:\n${answer.stdout}\n${answer.stderr}\n${(err as Error).message}`,
        );
      }
    }
  }, 240_000);
});
