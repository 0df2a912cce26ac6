/** The colour of each status word any screen shows (emails, keys, domains, webhooks, inbound). */
const TONE: Record<string, string> = {
  delivered: 'good',
  sent: 'good',
  active: 'good',
  healthy: 'good',
  verified: 'good',
  succeeded: 'good',
  enabled: 'good',
  pass: 'good',
  bounced: 'bad',
  complained: 'bad',
  failed: 'bad',
  unhealthy: 'bad',
  fail: 'bad',
  mismatch: 'bad',
  missing: 'bad',
  revoked: 'muted',
  expired: 'muted',
  cancelled: 'muted',
  disabled: 'muted',
  suppressed: 'warn',
  deferred: 'warn',
  held: 'warn',
  pending: 'warn',
};

/** A status word in a coloured pill (the word itself carries the meaning, not the colour). */
export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${TONE[status] ?? 'neutral'}`}>{status}</span>;
}
