import { sql } from 'kysely';
import type { EmailStatus } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import type { Page } from '../core/pages.ts';
import { findContact } from './contacts.ts';

/**
 * GET /contacts/{id}/emails: every message sent to a contact's address, newest first, with what
 * became of it (status, bounce, complaint), the engagement it drew (opens and clicks, by people and
 * by machines, as the engagement door classified them: marketing/user-agents.ts) and the campaign or
 * flow it came from. Messages are found by the address through the emails' recipient index
 * (migration 0025), so transactional mail to the address is listed too; after a contact changes
 * address, mail to the old one is not.
 */

interface ContactEmailRow {
  id: string;
  stream: string;
  status: EmailStatus;
  subject: string;
  from_header: string;
  created_at: Date;
  sent_at: Date | null;
  campaign_id: string | null;
  campaign_name: string | null;
  flow_id: string | null;
  flow_name: string | null;
  flow_step: string | null;
  opens_people: number;
  opens_machines: number;
  clicks_people: number;
  clicks_machines: number;
  last_opened_at: Date | null;
  last_clicked_at: Date | null;
  bounced_at: Date | null;
  bounce_type: string | null;
  bounce_response: string | null;
  complained_at: Date | null;
  unsubscribed_at: Date | null;
}

/** An open or click a person made (the engagement door's classification; machines otherwise). */
const human = sql`coalesce(detail ->> 'user_agent_class', '') = 'human'`;

const iso = (d: Date | null) => d?.toISOString() ?? null;

function presentContactEmail(r: ContactEmailRow) {
  return {
    id: r.id,
    object: 'contact_email' as const,
    stream: r.stream,
    status: r.status,
    subject: r.subject,
    from: r.from_header,
    campaign: r.campaign_id === null ? null : { id: r.campaign_id, name: r.campaign_name },
    flow: r.flow_id === null ? null : { id: r.flow_id, name: r.flow_name, step: r.flow_step },
    opens: { people: r.opens_people, machines: r.opens_machines, last_at: iso(r.last_opened_at) },
    clicks: { people: r.clicks_people, machines: r.clicks_machines, last_at: iso(r.last_clicked_at) },
    bounce:
      r.bounced_at === null
        ? null
        : { type: r.bounce_type, response: r.bounce_response, at: r.bounced_at.toISOString() },
    complained_at: iso(r.complained_at),
    unsubscribed_at: iso(r.unsubscribed_at),
    sent_at: iso(r.sent_at),
    created_at: r.created_at.toISOString(),
  };
}

/** The messages to a contact (by id or address), one page of them with their outcome and engagement. */
export async function listContactEmails(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  idOrEmail: string,
  page: Page,
) {
  const contact = await findContact(ctx, projectId, idOrEmail);
  const to = sql`e.project_id = ${projectId} and e.recipients @> array[${contact.email}]::text[]`;
  // one address's messages are few among many: found through the index, then sorted (as the
  // emails log's `to` filter does)
  const { rows } = await sql<ContactEmailRow>`
    with mine as (
      select e.id, e.stream, e.status, e.subject, e.from_header, e.created_at, e.sent_at,
             e.campaign_id, e.flow_id, e.flow_step
        from emails e
       where ${to}
       order by e.created_at + interval '0 seconds' desc, e.id
       limit ${page.limit} offset ${page.offset}
    )
    select m.*, c.name as campaign_name, f.name as flow_name, ev.*
      from mine m
      left join campaigns c on c.id = m.campaign_id
      left join flows f on f.id = m.flow_id
      left join lateral (
        select count(*) filter (where type = 'opened' and ${human})::int as opens_people,
               count(*) filter (where type = 'opened' and not ${human})::int as opens_machines,
               count(*) filter (where type = 'clicked' and ${human})::int as clicks_people,
               count(*) filter (where type = 'clicked' and not ${human})::int as clicks_machines,
               max(created_at) filter (where type = 'opened' and ${human}) as last_opened_at,
               max(created_at) filter (where type = 'clicked' and ${human}) as last_clicked_at,
               max(created_at) filter (where type = 'bounced') as bounced_at,
               (array_agg(detail ->> 'bounce_type' order by id desc) filter (where type = 'bounced'))[1] as bounce_type,
               (array_agg(detail ->> 'response' order by id desc) filter (where type = 'bounced'))[1] as bounce_response,
               max(created_at) filter (where type = 'complained') as complained_at,
               max(created_at) filter (where type = 'unsubscribed') as unsubscribed_at
          from email_events where email_id = m.id
      ) ev on true
     order by m.created_at desc, m.id`.execute(ctx.db);
  const total = await sql<{ n: number }>`select count(*)::int as n from emails e where ${to}`.execute(ctx.db);
  return {
    data: rows.map(presentContactEmail),
    total: total.rows[0].n,
    limit: page.limit,
    offset: page.offset,
  };
}
