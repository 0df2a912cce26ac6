const TONE: Record<string, string> = {
  delivered: 'good',
  sent: 'good',
  active: 'good',
  bounced: 'bad',
  complained: 'bad',
  failed: 'bad',
  revoked: 'muted',
  expired: 'muted',
  cancelled: 'muted',
  suppressed: 'warn',
  deferred: 'warn',
};

/** A status word in a coloured pill (the word itself carries the meaning, not the colour). */
export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${TONE[status] ?? 'neutral'}`}>{status}</span>;
}
