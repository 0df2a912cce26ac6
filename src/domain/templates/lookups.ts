import type pg from 'pg';
import { GroupCommit } from '../core/group-commit.ts';
import type { TemplateContact } from './render.ts';

/** What the template sends of one request need from the database. */
interface LookupRequest {
  projectId: string;
  templateIds: string[];
  /** Lower-cased first recipients: contacts are stored with lower-case addresses. */
  emails: string[];
}

export interface SendLookups {
  /** Each existing template's latest published version (0: never published). */
  latest: Map<string, number>;
  contacts: Map<string, TemplateContact>;
}

// one statement for both lookups, and concurrent sends share it (grouped like key lookups)
const LOOKUP_QUERY = {
  name: 'template-send-lookups',
  text: `select 't' as kind, project_id, id::text as key, latest_version,
                null::text as email, null::text as first_name, null::text as last_name, null::jsonb as properties
           from templates
          where (project_id, id) in (select * from unnest($1::uuid[], $2::uuid[]))
         union all
         select 'c', project_id, email, null, email, first_name, last_name, properties
           from contacts
          where (project_id, email) in (select * from unnest($3::uuid[], $4::text[]))`,
};

const lookups = new WeakMap<pg.Pool, GroupCommit<LookupRequest, SendLookups>>();

async function lookupGroup(pool: pg.Pool, requests: LookupRequest[]): Promise<SendLookups[]> {
  const templates = requests.flatMap((r) => r.templateIds.map((id) => [r.projectId, id]));
  const contacts = requests.flatMap((r) => r.emails.map((e) => [r.projectId, e]));
  const { rows } = await pool.query({
    ...LOOKUP_QUERY,
    values: [
      templates.map((t) => t[0]),
      templates.map((t) => t[1]),
      contacts.map((c) => c[0]),
      contacts.map((c) => c[1]),
    ],
  });
  return requests.map((r) => {
    const mine = rows.filter((row) => row.project_id === r.projectId);
    return {
      latest: new Map(mine.filter((row) => row.kind === 't').map((row) => [row.key, row.latest_version])),
      contacts: new Map(
        mine
          .filter((row) => row.kind === 'c')
          .map((row) => [
            row.key,
            {
              email: row.email,
              first_name: row.first_name,
              last_name: row.last_name,
              properties: row.properties,
            },
          ]),
      ),
    };
  });
}

/**
 * The templates a request's sends name (latest published version) and the contacts they go to, in
 * one query shared by concurrent requests; each query starts after every request in it arrived, so
 * a publish committed before a send is seen by it.
 */
export function lookupForSends(pool: pg.Pool, request: LookupRequest): Promise<SendLookups> {
  let group = lookups.get(pool);
  if (!group) {
    group = new GroupCommit((requests: LookupRequest[]) => lookupGroup(pool, requests), {
      maxInFlight: 2,
      maxWeight: 500,
      weight: (r) => r.templateIds.length + r.emails.length,
      retryAlone: false,
    });
    lookups.set(pool, group);
  }
  return group.submit(request);
}
