import type { Task } from 'graphile-worker';
import type { DomainContext } from '../domain/core/context.ts';
import { alertOnDay } from '../domain/dmarc/alerts.ts';

/**
 * Judges a domain's DMARC alerts for the day of an aggregate report the MX just stored (queued in
 * the report's own transaction): each alert is recorded once, so a job run again announces nothing
 * twice.
 */
export function dmarcAlertsTask(ctx: DomainContext): Task<'dmarc_alerts'> {
  return async (payload) => {
    await alertOnDay(ctx, payload.domain_id, payload.day);
  };
}
