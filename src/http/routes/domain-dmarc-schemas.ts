import { Type } from 'typebox';
import { Nullable } from '../schemas.ts';

const Day = Type.String({ description: 'a UTC day, YYYY-MM-DD' });

export const SourceLabelSchema = Type.Object(
  {
    id: Type.String(),
    source: Type.String({ description: 'the address or network labelled' }),
    label: Type.String(),
    created_at: Type.String(),
  },
  { title: 'DmarcSourceLabel' },
);

const Group = Type.Object({
  sources: Type.Integer(),
  messages: Type.Integer(),
  aligned: Type.Integer(),
});

const TxtRecord = Type.Object({ type: Type.Literal('TXT'), name: Type.String(), value: Type.String() });

export const DmarcSchema = Type.Object(
  {
    object: Type.Literal('domain_dmarc'),
    window: Type.Object(
      { from: Day, to: Day, days: Type.Integer() },
      { description: 'the days shown: the newest `days` days of aggregate reports, up to the latest one' },
    ),
    summary: Type.Object({
      messages: Type.Integer({ description: 'messages the aggregate reports counted' }),
      aligned: Type.Integer({ description: 'of them, those that passed DMARC (DKIM or SPF aligned)' }),
      aligned_rate: Nullable(Type.Number({ description: 'aligned / messages; null with no report yet' })),
      reports: Type.Integer(),
      policy: Nullable(Type.String({ description: 'the policy (p) the latest report saw published' })),
    }),
    unauthenticated: Type.Object(
      {
        reports: Type.Integer({
          description: 'aggregate reports over the window whose mail was not authenticated',
        }),
        messages: Type.Integer({ description: 'the messages they claim' }),
        reporters: Type.Array(Type.String(), { description: 'who they claim to come from (20 at most)' }),
      },
      {
        description:
          "reports whose mail did not pass DMARC for its reporter's domain: anyone can mail the report address, so they count for nothing above (summary, sources, series, coach, alerts) and are shown here apart",
      },
    ),
    groups: Type.Object(
      { posthorn: Group, labelled: Group, unknown: Group },
      { description: "the sources grouped: Posthorn's own, labelled by you, unknown" },
    ),
    series: Type.Array(
      Type.Object({
        day: Day,
        messages: Type.Integer(),
        aligned: Type.Integer(),
        known_messages: Type.Integer({ description: "from Posthorn's own and labelled sources" }),
        known_aligned: Type.Integer(),
      }),
      { description: "each day's volume and alignment" },
    ),
    sources: Type.Array(
      Type.Object({
        source_ip: Type.String(),
        kind: Type.Enum(['posthorn', 'labelled', 'unknown'], { type: 'string' }),
        name: Nullable(
          Type.String({ description: 'the Posthorn route or signature it was known by, or its label' }),
        ),
        messages: Type.Integer(),
        aligned: Type.Integer(),
        reporters: Type.Integer({ description: 'how many reporters saw it' }),
        first_day: Day,
        last_day: Day,
      }),
      { description: 'the addresses that sent mail as the domain, the busiest first (200 at most)' },
    ),
    labels: Type.Array(SourceLabelSchema),
    tls: Type.Object({
      window: Nullable(Type.Object({ from: Day, to: Day })),
      policies: Type.Array(
        Type.Object({
          policy_domain: Type.String(),
          policy_type: Type.String({ description: 'sts, tlsa or no-policy-found' }),
          successful: Type.Integer(),
          failed: Type.Integer(),
        }),
        { description: 'TLS sessions reported, by policy domain and type' },
      ),
      failures: Type.Array(
        Type.Object({
          policy_domain: Type.String(),
          receiving_mx: Nullable(Type.String({ description: 'the receiving MX host the sender reported' })),
          result_type: Type.String({ description: 'as RFC 8460 names it, e.g. certificate-expired' }),
          sessions: Type.Integer(),
        }),
        { description: 'failed TLS sessions by receiving domain, MX and type, the most first' },
      ),
    }),
    coach: Type.Object(
      {
        state: Type.Enum(['no_reports', 'stale', 'observing', 'fix_alignment', 'propose', 'at_reject'], {
          type: 'string',
        }),
        message: Type.String(),
        proposal: Nullable(
          Type.Object({ p: Type.Enum(['quarantine', 'reject'], { type: 'string' }), record: TxtRecord }),
        ),
        known_aligned_rate: Nullable(Type.Number({ description: 'known sources, the last 30 days' })),
        days_observed: Type.Integer({ description: 'days of reports under the published policy' }),
      },
      { description: 'the road to p=reject: the next policy with its exact record once 30 days allow it' },
    ),
    reports: Type.Array(
      Type.Object({
        id: Type.String(),
        kind: Type.Enum(['aggregate', 'tls', 'unreadable'], { type: 'string' }),
        reporter: Nullable(Type.String()),
        reporter_email: Nullable(Type.String()),
        reporter_domain: Nullable(Type.String({ description: "the domain of the report mail's From" })),
        authenticated: Type.Boolean({
          description: 'the report mail passed DMARC for that domain: only such reports are counted',
        }),
        report_id: Nullable(Type.String()),
        begin: Nullable(Type.String()),
        end: Nullable(Type.String()),
        messages: Type.Integer({ description: 'messages (aggregate) or sessions (TLS) it counted' }),
        file: Nullable(Type.String()),
        reason: Nullable(Type.String({ description: 'unreadable: why it could not be read (it is kept)' })),
        received_at: Type.String(),
      }),
      { description: 'the latest reports received, newest first' },
    ),
  },
  { title: 'DomainDmarc' },
);
