import type { HTTPMethods } from 'fastify';

/**
 * Resend's operations this door does not answer, each with Posthorn's equivalent (the README lists
 * them too): answered 405 `method_not_allowed`, with the message naming what to use instead.
 */
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
  // received emails: matched before /emails/:id, until the door answers them
  ['GET', '/emails/receiving', 'List received mail with GET /v1/inbound.'],
  ['GET', '/emails/receiving/:id', 'Read received mail with GET /v1/inbound/{id}.'],
  [
    'GET',
    '/emails/receiving/:id/attachments',
    "Read received mail's attachments with GET /v1/inbound/{id} (they are listed there).",
  ],
  [
    'GET',
    '/emails/receiving/:id/attachments/:attachment_id',
    'Download an attachment of received mail with GET /v1/inbound/{id}/attachments/{position}.',
  ],
  ['POST', '/contacts/imports', 'Import a CSV with POST /v1/contacts/import.'],
  ['GET', '/contacts/imports', 'Follow an import with GET /v1/imports/{id}.'],
  ['GET', '/contacts/imports/:id', 'Follow an import with GET /v1/imports/{id}.'],
  [
    'GET',
    '/contacts/:id/topics',
    'Posthorn has lists in place of topics: GET /contacts/{id}/segments lists them.',
  ],
  [
    'PATCH',
    '/contacts/:id/topics',
    'Posthorn has lists in place of topics: add or remove with /contacts/{id}/segments/{segment_id}.',
  ],
];
