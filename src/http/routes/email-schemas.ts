import { Type } from 'typebox';
import { EMAIL_STATUSES } from '../../domain/emails/read.ts';
import { MIN_MESSAGES_TO_JUDGE } from '../../domain/emails/stats.ts';
import { Nullable } from '../schemas.ts';

/** The shapes of the email API's bodies and answers (emails.ts registers the routes). */
export const Recipients = Type.Union([Type.String(), Type.Array(Type.String())], {
  description:
    'an address, "Name <address>", or an array of them (50 recipients at most over to, cc and bcc)',
});

export const EmailInputSchema = Type.Object(
  {
    from: Type.Optional(
      Type.String({
        description:
          'sender: `address` or `Name <address>`, on a verified domain of the project (required unless the template has a default `from`)',
      }),
    ),
    to: Recipients,
    cc: Type.Optional(Recipients),
    bcc: Type.Optional(Recipients),
    reply_to: Type.Optional(Recipients),
    subject: Type.Optional(
      Type.String({ maxLength: 998, description: 'required unless `template` is given' }),
    ),
    html: Type.Optional(Type.String()),
    text: Type.Optional(Type.String({ description: 'derived from `html` when absent' })),
    headers: Type.Optional(
      Type.Record(Type.String(), Type.String(), {
        description: 'custom headers; no line breaks, no protected names',
      }),
    ),
    attachments: Type.Optional(
      Type.Array(
        Type.Object({
          filename: Type.Optional(Type.String()),
          content: Type.Optional(Type.String({ description: 'base64; or give `path`' })),
          path: Type.Optional(
            Type.String({
              description:
                'a URL the file is fetched from as the message is accepted (public addresses only, no redirects), in place of `content`. A request fetches 4 files at once, all within 10 s; a message stops at its 40 MB (base64-encoded), a request at 80 MB',
            }),
          ),
          content_type: Type.Optional(Type.String()),
          content_id: Type.Optional(
            Type.String({ description: 'for inline images: reference as cid:<content_id>' }),
          ),
        }),
        { maxItems: 100 },
      ),
    ),
    tags: Type.Optional(
      Type.Array(Type.Object({ name: Type.String(), value: Type.String() }), { maxItems: 50 }),
    ),
    scheduled_at: Type.Optional(
      Type.String({
        description:
          'ISO 8601, or "in 1 hour", "in 30 minutes", "tomorrow at 9am" (UTC); up to 30 days ahead',
      }),
    ),
    template: Type.Optional(
      Type.Object(
        {
          id: Type.String({ description: 'the template id' }),
          version: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 1_000_000,
              description: 'a published version; the latest when absent',
            }),
          ),
          variables: Type.Optional(
            Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()]), {
              description: "values for the template's declared variables (defaults fill the rest)",
            }),
          ),
        },
        {
          title: 'TemplateReference',
          description: 'send a published template in place of `subject`, `html` and `text`',
        },
      ),
    ),
  },
  { title: 'SendEmailRequest' },
);

export const EmailStatusSchema = Type.String({ enum: [...EMAIL_STATUSES] });

export const Accepted = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('email'),
    status: Type.String(),
    warnings: Type.Optional(
      Type.Array(Type.String(), { description: 'names of unknown fields that were ignored' }),
    ),
  },
  { title: 'AcceptedEmail' },
);

export const EmailEvent = Type.Object(
  {
    object: Type.Literal('email_event'),
    type: Type.String(),
    recipient: Nullable(Type.String()),
    detail: Type.Record(Type.String(), Type.Unknown(), {
      description:
        "what the event says: the remote server's response, the bounce type (`hard`: the address, suppressed; `block`: the sender or content, not suppressed), and for a direct route `via`: the MX host, its address, the source address and the TLS version (null: in clear)",
    }),
    created_at: Type.String(),
  },
  { title: 'EmailEvent' },
);

export const EmailSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('email'),
    stream: Type.String(),
    status: EmailStatusSchema,
    message_id: Type.String(),
    from: Type.String(),
    to: Type.Array(Type.String()),
    cc: Type.Array(Type.String()),
    bcc: Type.Array(Type.String()),
    reply_to: Type.Array(Type.String()),
    subject: Type.String(),
    tags: Type.Array(Type.Object({ name: Type.String(), value: Type.String() })),
    headers: Type.Record(Type.String(), Type.String()),
    attachments: Type.Array(
      Type.Object({
        filename: Nullable(Type.String()),
        content_type: Nullable(Type.String()),
        content_id: Nullable(Type.String()),
        size: Type.Integer(),
      }),
    ),
    size_bytes: Type.Integer(),
    attempts: Type.Integer(),
    last_response: Nullable(Type.String()),
    scheduled_at: Nullable(Type.String()),
    next_attempt_at: Nullable(Type.String()),
    sent_at: Nullable(Type.String()),
    template: Nullable(
      Type.Object(
        { id: Type.String(), version: Type.Integer() },
        { description: 'the published template version this email was rendered from' },
      ),
    ),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { title: 'Email' },
);

export const DayCounts = {
  sent: Type.Integer({ description: 'recipients handed over to the next server, whatever it answered' }),
  delivered: Type.Integer({ description: 'recipients accepted by the receiving server itself' }),
  bounced: Type.Integer({ description: 'hard bounces, at hand-over or reported later by a DSN' }),
  complained: Type.Integer({ description: 'spam complaints' }),
};
export const RateSchema = Type.Object({
  value: Nullable(Type.Number({ description: 'a fraction (0.012 is 1.2%); null when nothing was sent' })),
  warning_at: Type.Number(),
  critical_at: Type.Number(),
  messages: Type.Integer({ description: 'the messages the rate is taken over' }),
  min_messages: Type.Integer({
    description: `the fewest messages a rate is judged on (${MIN_MESSAGES_TO_JUDGE}): below, \`level\` is \`too_few\``,
  }),
  level: Nullable(
    Type.String({
      enum: ['good', 'warning', 'critical', 'too_few'],
      description:
        'against the thresholds; `too_few` when fewer than `min_messages` messages were sent (the value is still given); null when none was',
    }),
  ),
});
