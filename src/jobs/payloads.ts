import type { AudienceEvent } from '../domain/audience/triggers.ts';
import type { DispatchPayload } from '../domain/webhooks/dispatch.ts';

/**
 * What a task run by the crontab (or queued with `'{}'` to run now) receives: graphile-worker's
 * `_cron` when the crontab queued it, nothing else. No such task reads it.
 */
export interface CronPayload {
  _cron?: { ts: string; backfilled: boolean };
}

/** The payload of the campaign jobs: the campaign's id only; the task re-reads the row. */
export interface CampaignPayload {
  campaign_id: string;
}

// The task name → payload map, by graphile-worker's declaration merging: `Task<name>` (each task
// file), the worker's task list and `JobSpec` (db/enqueue.ts, used by every enqueue) all read it,
// so a task and the code that queues it cannot disagree on a payload. Payloads carry ids only.
declare global {
  namespace GraphileWorker {
    interface Tasks {
      deliver_email: { ids: string[] };
      /** Transactional mail's deliveries: run also by the workers kept for it (worker.ts). */
      deliver_transactional: { ids: string[] };
      send_login_code: { email: string };
      send_password_reset: { email: string };
      // the address, the name and when the terms were ticked: the account is made by the job
      send_signup_code: { email: string; name: string; terms_accepted_at: string };
      import_contacts: { import_id: string };
      campaign_send: CampaignPayload;
      campaign_finish: CampaignPayload;
      campaign_ab_winner: CampaignPayload;
      campaign_start: CampaignPayload;
      /** Counts a large sent campaign's stats and activity again for its page (campaigns/stats-cache.ts). */
      campaign_stats_refresh: CampaignPayload;
      audience_event: AudienceEvent;
      audience_outbox: CronPayload;
      flow_advance: CronPayload;
      webhook_dispatch: DispatchPayload;
      /** A domain's DMARC alerts judged again for the day of an aggregate report just stored (dmarc/alerts.ts). */
      dmarc_alerts: { domain_id: string; day: string };
      webhook_deliver: { delivery_id: string };
      maintenance: CronPayload;
      recheck_domains: CronPayload;
    }
  }
}
