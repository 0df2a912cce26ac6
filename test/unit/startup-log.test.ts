import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { Runtime } from '../../src/runtime.ts';
import { readableLine, startupSummary } from '../../src/startup-log.ts';

const base = { POSTHORN_SECRET: 's'.repeat(40), POSTHORN_DATA_DIR: '/nonexistent/posthorn-startup-test' };
const everyRole = {
  url: 'http://127.0.0.1:3000',
  smtp: { submissionPort: 2587, tlsPort: null, mxPort: 2525 },
  worker: {},
} as unknown as Runtime;

describe('the start-up summary', () => {
  it('names the dashboard, the API and its docs, the SMTP ports, the dev mailbox and how to read it', () => {
    const text = startupSummary(loadConfig({ ...base, PORT: '3000' }), everyRole).join('\n');
    expect(text).toContain('Dashboard:  http://localhost:3000/');
    expect(text).toContain('http://127.0.0.1:3000/v1 ');
    expect(text).toContain('docs: http://127.0.0.1:3000/v1/docs');
    expect(text).toMatch(/submission on 127\.0\.0\.1:2587 .*inbound MX on 127\.0\.0\.1:2525/);
    expect(text).toContain('dev mailbox');
    expect(text).toContain('npx posthorn mailbox');
    expect(text).toContain('embedded PostgreSQL');
  });

  it('names the relay without its password when POSTHORN_SMTP_RELAY is set, and a dashboard at POSTHORN_APP_URL', () => {
    const config = loadConfig({
      ...base,
      POSTHORN_SMTP_RELAY: 'smtp://user:secret-pass@relay.example.com:587',
      POSTHORN_APP_URL: 'https://app.example.com/',
    });
    const text = startupSummary(config, everyRole).join('\n');
    expect(text).toContain('through the relay smtp://relay.example.com:587');
    expect(text).not.toContain('secret-pass');
    expect(text).not.toContain('dev mailbox');
    expect(text).toContain('Dashboard:  https://app.example.com/');
  });

  it('names the routes of POSTHORN_ROUTES with their hosts, without their passwords', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-startup-routes-'));
    const file = path.join(dir, 'routes.json');
    writeFileSync(
      file,
      JSON.stringify({
        routes: {
          relay: { type: 'smtp', url: 'smtps://user:secret-pass@relay.example.com' },
          dev: { type: 'mailbox' },
        },
        rules: [{ match: {}, routes: ['relay'] }],
      }),
    );
    const text = startupSummary(loadConfig({ ...base, POSTHORN_ROUTES: file }), everyRole).join('\n');
    rmSync(dir, { recursive: true, force: true });
    expect(text).toContain(
      `Mail out:   by the routes of ${file} (POSTHORN_ROUTES): relay (smtps://relay.example.com), dev (dev mailbox)`,
    );
    expect(text).not.toContain('secret-pass');
  });

  it('says where the embedded database keeps its data when it moved out of the data dir', () => {
    const moved = { ...everyRole, embeddedPgDir: '/var/lib/posthorn/pg-0123456789ab' } as Runtime;
    const text = startupSummary(loadConfig(base), moved).join('\n');
    expect(text).toContain('embedded PostgreSQL, data in /var/lib/posthorn/pg-0123456789ab');
  });
});

describe('POSTHORN_LOG_FORMAT', () => {
  it('is auto unless set to text or json, and refuses anything else', () => {
    expect(loadConfig(base).logFormat).toBe('auto');
    expect(loadConfig({ ...base, POSTHORN_LOG_FORMAT: 'JSON' }).logFormat).toBe('json');
    expect(() => loadConfig({ ...base, POSTHORN_LOG_FORMAT: 'yaml' })).toThrow(
      'POSTHORN_LOG_FORMAT must be auto, text or json, got "yaml"',
    );
  });

  it('turns a JSON log line into time, level, role, message and the other fields', () => {
    const line = readableLine(
      JSON.stringify({
        level: 40,
        time: Date.now(),
        pid: 1,
        hostname: 'h',
        role: 'smtp',
        msg: 'slow',
        ms: 12,
      }),
    );
    expect(line).toMatch(/^\d\d:\d\d:\d\d warn {2}\[smtp\] slow {2}ms=12\n$/);
  });
});
