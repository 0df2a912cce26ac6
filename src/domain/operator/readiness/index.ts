import type { DomainContext } from '../../core/context.ts';
import { deliveryChecks } from './delivery.ts';
import { sharedDomainChecks } from './shared-domain.ts';
import type { ReadinessCheck } from './types.ts';
import { smtpTlsCheck, webChecks } from './web.ts';

export type { ReadinessCheck, ReadinessStatus } from './types.ts';

export interface ReadinessReport {
  /** True when no check failed (warnings and skipped checks aside). */
  ready: boolean;
  checked_at: string;
  checks: ReadinessCheck[];
}

/**
 * What stands between this server and real delivery (issue 48, build item 4), checked now from
 * where the server stands: its public URL and certificates, the shared domain's names and
 * records, and the ways mail leaves. The three groups run side by side; each check has its deadline.
 */
export async function productionReadiness(ctx: DomainContext): Promise<ReadinessReport> {
  const [web, smtp, shared, delivery] = await Promise.all([
    webChecks(ctx.config),
    smtpTlsCheck(ctx.config),
    sharedDomainChecks(ctx),
    deliveryChecks(ctx.config),
  ]);
  const checks: ReadinessCheck[] = [
    ...[...web, smtp].map((c) => ({ ...c, group: 'web' as const })),
    ...shared.map((c) => ({ ...c, group: 'shared_domain' as const })),
    ...delivery.map((c) => ({ ...c, group: 'delivery' as const })),
  ];
  return { ready: checks.every((c) => c.status !== 'fail'), checked_at: new Date().toISOString(), checks };
}
