/**
 * One thing between this server and real delivery (issue 48, build item 4), as the operator reads
 * it in `posthorn admin doctor` and the dashboard's Production readiness page: what was checked,
 * how it stands, what was found, and what to do about it in plain words (null when nothing).
 */
export type ReadinessStatus = 'pass' | 'fail' | 'warn' | 'skip';

export interface ReadinessCheck {
  id: string;
  /** The group it belongs to: web, shared domain, delivery. */
  group: 'web' | 'shared_domain' | 'delivery';
  title: string;
  status: ReadinessStatus;
  detail: string;
  fix: string | null;
}

export type Check = Omit<ReadinessCheck, 'group'>;

export const pass = (id: string, title: string, detail: string): Check => ({
  id,
  title,
  status: 'pass',
  detail,
  fix: null,
});

export const fail = (id: string, title: string, detail: string, fix: string): Check => ({
  id,
  title,
  status: 'fail',
  detail,
  fix,
});

export const warn = (id: string, title: string, detail: string, fix: string): Check => ({
  id,
  title,
  status: 'warn',
  detail,
  fix,
});

export const skip = (id: string, title: string, detail: string, fix: string | null = null): Check => ({
  id,
  title,
  status: 'skip',
  detail,
  fix,
});

/** Names no one outside this machine can reach: localhost, *.localhost, loopback addresses. */
export function isLocalName(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(h) || h === '::1';
}

/** An error's message with its code, for a detail (without Node's advice about its own flags). */
export function reason(err: unknown): string {
  const message = ((err as Error).message ?? String(err)).replace(
    /; if the root CA is installed locally.*$/,
    '',
  );
  const code = (err as { code?: string }).code;
  return code && !message.includes(code) ? `${message} (${code})` : message;
}

/** Whether an error means nothing answered at the name (no address, refused, unreachable). */
export const unreachable = (err: unknown): boolean =>
  /ENOTFOUND|ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|no A or AAAA|within 5 s/.test(reason(err));
