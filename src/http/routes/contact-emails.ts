import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { listContactEmails } from '../../domain/audience/contact-emails.ts';
import type { DomainContext } from '../../domain/core/context.ts';
import { projectOf } from '../auth.ts';
import { errors, Nullable, PageQuery, page, pageOf, Timestamp, typed } from '../schemas.ts';
import { EmailStatusSchema } from './email-schemas.ts';

const Engagement = (what: string) =>
  Type.Object(
    {
      people: Type.Integer({ description: `${what} by a person` }),
      machines: Type.Integer({
        description: `${what} by a machine: privacy proxies, link scanners, fetches in the first seconds after sending`,
      }),
      last_at: Nullable(Timestamp),
    },
    { description: `${what}s of this message` },
  );

export const ContactEmailSchema = Type.Object(
  {
    id: Type.String({ description: 'the email id (GET /emails/{id} gives its bodies and every event)' }),
    object: Type.Literal('contact_email'),
    stream: Type.String({ description: 'transactional, marketing (a campaign) or automation (a flow)' }),
    status: EmailStatusSchema,
    subject: Type.String(),
    from: Type.String(),
    campaign: Nullable(
      Type.Object({ id: Type.String(), name: Nullable(Type.String({ description: 'null once deleted' })) }),
    ),
    flow: Nullable(
      Type.Object({
        id: Type.String(),
        name: Nullable(Type.String({ description: 'null once deleted' })),
        step: Nullable(Type.String({ description: 'the send step' })),
      }),
    ),
    opens: Engagement('open'),
    clicks: Engagement('click'),
    bounce: Nullable(
      Type.Object({
        type: Nullable(
          Type.String({ description: '`hard`: the address (suppressed); `block`: the sender or content' }),
        ),
        response: Nullable(Type.String({ description: "the receiving server's answer" })),
        at: Timestamp,
      }),
    ),
    complained_at: Nullable(Timestamp),
    unsubscribed_at: Nullable(Timestamp),
    sent_at: Nullable(Timestamp),
    created_at: Timestamp,
  },
  { title: 'ContactEmail' },
);

/** GET /contacts/{id}/emails: the messages a contact was sent. */
export async function contactEmailRoutes(instance: FastifyInstance, { ctx }: { ctx: DomainContext }) {
  const app = typed(instance);
  app.get(
    '/contacts/:id/emails',
    {
      config: { auth: 'project' as const },
      schema: {
        tags: ['contacts'],
        summary: 'The messages sent to one contact, newest first, with their outcome and engagement',
        description:
          "Every message to the contact's address (campaigns, flows and transactional mail): its status, bounce and complaint, opens and clicks by people and by machines, and the campaign or flow it came from.",
        operationId: 'listContactEmails',
        params: Type.Object({ id: Type.String({ description: 'contact id or email address' }) }),
        querystring: PageQuery,
        response: {
          200: Type.Object(page(ContactEmailSchema).properties, { title: 'ContactEmailPage' }),
          ...errors(400, 401, 404),
        },
      },
    },
    async (request) => listContactEmails(ctx, projectOf(request), request.params.id, pageOf(request.query)),
  );
}
