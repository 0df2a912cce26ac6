import type { ReadinessReport } from '../domain/operator/readiness/index.ts';
import { findLocalServer } from './local-server.ts';

/**
 * `posthorn admin doctor`: asks the running server what stands between it and real delivery
 * (GET /v1/admin/readiness, answered to this machine or with POSTHORN_METRICS_TOKEN), prints each
 * check with a mark and what to do, and exits 1 when one failed (`--json`: the report as JSON).
 */

const MARKS = { pass: '[ok]  ', fail: '[FAIL]', warn: '[warn]', skip: '[skip]' } as const;
const GROUPS = { web: 'Web and TLS', shared_domain: 'Shared domain', delivery: 'Delivery' } as const;

export function formatReadiness(report: ReadinessReport): string {
  const lines: string[] = [];
  for (const [group, heading] of Object.entries(GROUPS)) {
    const checks = report.checks.filter((c) => c.group === group);
    if (checks.length === 0) continue;
    lines.push(`${heading}:`);
    for (const check of checks) {
      lines.push(`  ${MARKS[check.status]} ${check.title}: ${check.detail}`);
      if (check.fix && check.status !== 'pass') lines.push(`         fix: ${check.fix}`);
    }
    lines.push('');
  }
  const failed = report.checks.filter((c) => c.status === 'fail').length;
  const warned = report.checks.filter((c) => c.status === 'warn').length;
  lines.push(
    failed === 0
      ? `Ready for production${warned ? ` (${warned} warning${warned === 1 ? '' : 's'})` : ''}.`
      : `${failed} check${failed === 1 ? '' : 's'} failed: not ready for real delivery yet.`,
  );
  return lines.join('\n');
}

/**
 * The server's API: --api-url, POSTHORN_API_URL, else the server running here (as it recorded
 * itself in its data folder), else this machine at PORT (3000). Never POSTHORN_PUBLIC_URL: through
 * a proxy the operator's endpoints answer only with POSTHORN_METRICS_TOKEN.
 */
function apiUrl(option: string | undefined): string {
  const url =
    option ||
    process.env.POSTHORN_API_URL ||
    findLocalServer({ ...process.env, POSTHORN_PUBLIC_URL: '' }).apiUrl;
  return url.replace(/\/+$/, '');
}

export async function runDoctor(opts: { json?: boolean; apiUrl?: string }): Promise<void> {
  const url = `${apiUrl(opts.apiUrl)}/admin/readiness`;
  const token = process.env.POSTHORN_METRICS_TOKEN;
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      signal: AbortSignal.timeout(60_000),
    });
  } catch (err) {
    console.error(
      `posthorn: no Posthorn server answered at ${url} (${(err as Error).message}): start it, or give its address with --api-url (or POSTHORN_API_URL)`,
    );
    process.exit(1);
  }
  const body = (await response.json().catch(() => null)) as ReadinessReport | { error?: string } | null;
  if (!response.ok || !body || !('checks' in body)) {
    const error = body && 'error' in body ? body.error : `HTTP ${response.status}`;
    console.error(`posthorn: ${url} answered ${response.status}: ${error}`);
    process.exit(1);
  }
  console.log(opts.json ? JSON.stringify(body, null, 2) : formatReadiness(body));
  process.exit(body.ready ? 0 : 1);
}
