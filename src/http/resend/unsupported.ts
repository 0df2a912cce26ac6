import type { HTTPMethods } from 'fastify';

/**
 * Resend's operations this door does not answer, each with Posthorn's equivalent (the README lists
 * them too): answered 405 `method_not_allowed`, with the message naming what to use instead.
 */
const INBOXES =
  'Posthorn has no inboxes: mail sent to your domain is received as inbound (GET /emails/receiving here, GET /v1/inbound, the email.received webhook), and answered with POST /emails.';
const GRANTS =
  'Posthorn has no OAuth grants: an application acts with an API key (POST /api-keys), scoped to a project.';

export const UNSUPPORTED: [HTTPMethods, string, string][] = [
  [
    'POST',
    '/emails/:id/share',
    'Posthorn has no public share links: read the message with GET /v1/emails/{id}, or its source with GET /v1/emails/{id}/raw.',
  ],
  [
    'POST',
    '/domains/claim',
    'Posthorn has no domain claims: add the domain with POST /domains and verify it by DNS.',
  ],
  [
    'GET',
    '/domains/:id/claim',
    'Posthorn has no domain claims: add the domain with POST /domains and verify it by DNS.',
  ],
  [
    'POST',
    '/domains/:id/claim/verify',
    'Posthorn has no domain claims: verify the domain with POST /domains/{id}/verify.',
  ],
  // inboxes (agent inboxes, their drafts, threads and labels) and OAuth grants: every method
  ...(['GET', 'POST', 'PATCH', 'PUT', 'DELETE'] as HTTPMethods[]).flatMap(
    (method): [HTTPMethods, string, string][] => [
      [method, '/inboxes', INBOXES],
      [method, '/inboxes/*', INBOXES],
      [method, '/oauth/grants', GRANTS],
      [method, '/oauth/grants/*', GRANTS],
    ],
  ),
  // events: Posthorn keeps no event definitions, a tracked event's name is all it needs (events.ts)
  [
    'POST',
    '/events',
    'Posthorn needs no event definition: send the event with POST /events/send and its name exists (GET /events lists the names tracked).',
  ],
  [
    'PATCH',
    '/events/:id',
    "Posthorn keeps no event schema: an event's payload is free-form (checked as contact properties are).",
  ],
  [
    'DELETE',
    '/events/:id',
    'Posthorn keeps no event definition to remove; tracked events stay for reports (GET /v1/events, GET /v1/reports/revenue).',
  ],
  [
    'POST',
    '/contact-properties',
    "Posthorn's contact properties need no definition: set a key on a contact (PATCH /contacts/{id} with `properties`) and it exists; GET /contact-properties lists the keys contacts hold.",
  ],
  [
    'PATCH',
    '/contact-properties/:id',
    'Posthorn keeps no stored fallback for a property: give one where it is used, `{{{contact.key|fallback}}}` in a broadcast or `{{ contact.properties.key | default: "fallback" }}` in Liquid.',
  ],
];
