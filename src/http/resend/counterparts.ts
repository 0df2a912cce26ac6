import type { FastifyInstance, RouteOptions } from 'fastify';
import type { Role } from '../../db/schema.ts';
import { ROLES } from '../../domain/accounts/roles.ts';

/**
 * The one rule for who may call the Resend door (issue 47, item 4): each of its operations stands
 * for one or more /v1 operations and takes their role, read from the /v1 route's own declaration
 * (the strictest when several), never restated here. A door route missing from this table stops
 * the server at start, so a new operation cannot slip in with the default role.
 *
 * Keys are not affected by roles (src/http/auth.ts); a dashboard session (`Bearer phs_...`) acting
 * as a Member is refused (403) exactly where /v1 refuses it.
 */
export const COUNTERPARTS: Record<string, string[]> = {
  'POST /resend/emails': ['POST /v1/emails'],
  'POST /resend/emails/batch': ['POST /v1/emails/batch'],
  'GET /resend/emails': ['GET /v1/emails'],
  'GET /resend/emails/metrics': ['GET /v1/emails/stats'],
  'GET /resend/emails/:id': ['GET /v1/emails/:id'],
  // /v1 has no reschedule: moving a scheduled email is changing it, as cancelling it is
  'PATCH /resend/emails/:id': ['POST /v1/emails/:id/cancel'],
  'POST /resend/emails/:id/cancel': ['POST /v1/emails/:id/cancel'],

  'POST /resend/domains': ['POST /v1/domains'],
  'GET /resend/domains': ['GET /v1/domains'],
  'GET /resend/domains/:id': ['GET /v1/domains/:id'],
  'PATCH /resend/domains/:id': ['PATCH /v1/domains/:id'],
  'DELETE /resend/domains/:id': ['DELETE /v1/domains/:id'],
  'POST /resend/domains/:id/verify': ['POST /v1/domains/:id/check'],

  'POST /resend/api-keys': ['POST /v1/projects/:project_id/api-keys'],
  'GET /resend/api-keys': ['GET /v1/projects/:project_id/api-keys'],
  // /v1 has no rename: renaming a key is managing it, as rotating it is
  'PATCH /resend/api-keys/:id': ['POST /v1/api-keys/:id/rotate'],
  'DELETE /resend/api-keys/:id': ['DELETE /v1/api-keys/:id'],

  'POST /resend/contacts': ['POST /v1/contacts', 'POST /v1/lists/:id/contacts'],
  'POST /resend/audiences/:id/contacts': ['POST /v1/contacts', 'POST /v1/lists/:id/contacts'],
  'GET /resend/contacts': ['GET /v1/contacts'],
  'GET /resend/segments/:id/contacts': ['GET /v1/contacts'],
  'GET /resend/audiences/:id/contacts': ['GET /v1/contacts'],
  'GET /resend/contacts/:id': ['GET /v1/contacts/:id'],
  'GET /resend/audiences/:audience_id/contacts/:id': ['GET /v1/contacts/:id'],
  'PATCH /resend/contacts/:id': ['PATCH /v1/contacts/:id'],
  'PATCH /resend/audiences/:audience_id/contacts/:id': ['PATCH /v1/contacts/:id'],
  'DELETE /resend/contacts/:id': ['DELETE /v1/contacts/:id'],
  'DELETE /resend/audiences/:audience_id/contacts/:id': ['DELETE /v1/contacts/:id'],
  'GET /resend/contacts/:id/segments': ['GET /v1/contacts/:id'],
  'POST /resend/contacts/:id/segments/:segment_id': ['POST /v1/lists/:id/contacts'],
  'DELETE /resend/contacts/:id/segments/:segment_id': ['DELETE /v1/lists/:id/contacts'],
  'POST /resend/segments': ['POST /v1/lists'],
  'GET /resend/segments': ['GET /v1/lists'],
  'GET /resend/segments/:id': ['GET /v1/lists/:id'],
  'PATCH /resend/segments/:id': ['PATCH /v1/lists/:id'],
  'DELETE /resend/segments/:id': ['DELETE /v1/lists/:id'],
  'POST /resend/audiences': ['POST /v1/lists'],
  'GET /resend/audiences': ['GET /v1/lists'],
  'GET /resend/audiences/:id': ['GET /v1/lists/:id'],
  'PATCH /resend/audiences/:id': ['PATCH /v1/lists/:id'],
  'DELETE /resend/audiences/:id': ['DELETE /v1/lists/:id'],

  // `send: true` sends (or schedules) what it creates
  'POST /resend/broadcasts': ['POST /v1/campaigns', 'POST /v1/campaigns/:id/send'],
  'GET /resend/broadcasts': ['GET /v1/campaigns'],
  'GET /resend/broadcasts/:id': ['GET /v1/campaigns/:id'],
  'PATCH /resend/broadcasts/:id': ['PATCH /v1/campaigns/:id'],
  'DELETE /resend/broadcasts/:id': ['DELETE /v1/campaigns/:id'],
  'POST /resend/broadcasts/:id/send': ['POST /v1/campaigns/:id/send', 'POST /v1/campaigns/:id/schedule'],
  'POST /resend/broadcasts/:id/cancel': ['POST /v1/campaigns/:id/cancel'],
  'GET /resend/broadcasts/:id/recipients': ['GET /v1/campaigns/:id/activity'],
  'GET /resend/broadcasts/:id/clicked-links': ['GET /v1/campaigns/:id/activity'],

  // a copy is a new campaign
  'POST /resend/broadcasts/:id/duplicate': ['POST /v1/campaigns'],

  'POST /resend/templates': ['POST /v1/templates'],
  'GET /resend/templates': ['GET /v1/templates'],
  'GET /resend/templates/:id': ['GET /v1/templates/:id'],
  'PATCH /resend/templates/:id': ['PATCH /v1/templates/:id'],
  'DELETE /resend/templates/:id': ['DELETE /v1/templates/:id'],
  'POST /resend/templates/:id/publish': ['POST /v1/templates/:id/publish'],
  // a copy is a new template
  'POST /resend/templates/:id/duplicate': ['POST /v1/templates'],

  'POST /resend/topics': ['POST /v1/topics'],
  'GET /resend/topics': ['GET /v1/topics'],
  'GET /resend/topics/:id': ['GET /v1/topics/:id'],
  'PATCH /resend/topics/:id': ['PATCH /v1/topics/:id'],
  'DELETE /resend/topics/:id': ['DELETE /v1/topics/:id'],
  'GET /resend/contacts/:id/topics': ['GET /v1/contacts/:id/topics'],
  'PATCH /resend/contacts/:id/topics': ['PATCH /v1/contacts/:id/topics'],

  // contact properties are the keys contacts hold: reading them is reading contacts, removing one
  // is changing every contact that has it
  'GET /resend/contact-properties': ['GET /v1/contacts'],
  'GET /resend/contact-properties/:id': ['GET /v1/contacts'],
  'DELETE /resend/contact-properties/:id': ['PATCH /v1/contacts/:id'],

  'GET /resend/usage': ['GET /v1/limits'],

  'POST /resend/contacts/imports': ['POST /v1/contacts/import'],
  'GET /resend/contacts/imports': ['GET /v1/imports/:id'],
  'GET /resend/contacts/imports/:id': ['GET /v1/imports/:id'],

  'POST /resend/webhooks': ['POST /v1/webhooks'],
  'GET /resend/webhooks': ['GET /v1/webhooks'],
  // the answer carries the signing secret only for a caller who may rotate it (webhooks.ts)
  'GET /resend/webhooks/:id': ['GET /v1/webhooks/:id'],
  'PATCH /resend/webhooks/:id': ['PATCH /v1/webhooks/:id'],
  'DELETE /resend/webhooks/:id': ['DELETE /v1/webhooks/:id'],
  'POST /resend/webhooks/:id/signing-secret/rotate': ['POST /v1/webhooks/:id/secret/rotate'],
  // a webhook's events are its delivery log read by message; replaying one is retrying it
  'GET /resend/webhooks/:id/events': ['GET /v1/webhooks/:id/deliveries'],
  'GET /resend/webhooks/:id/events/:event_id': ['GET /v1/webhooks/:id/deliveries'],
  'GET /resend/webhooks/:id/events/:event_id/attempts': ['GET /v1/webhooks/:id/deliveries'],
  'POST /resend/webhooks/:id/events/:event_id/replay': [
    'POST /v1/webhooks/:id/deliveries/:delivery_id/retry',
  ],

  'GET /resend/emails/:id/attachments': ['GET /v1/emails/:id'],
  'GET /resend/emails/:id/attachments/:attachment_id': ['GET /v1/emails/:id'],
  'GET /resend/emails/receiving': ['GET /v1/inbound'],
  'GET /resend/emails/receiving/:id': ['GET /v1/inbound/:id'],
  'GET /resend/emails/receiving/:id/attachments': ['GET /v1/inbound/:id'],
  'GET /resend/emails/receiving/:id/attachments/:attachment_id': [
    'GET /v1/inbound/:id/attachments/:position',
  ],

  'POST /resend/events/send': ['POST /v1/events'],
  'GET /resend/events': ['GET /v1/events'],
  'GET /resend/events/:id': ['GET /v1/events'],

  // `status: "enabled"` activates what it creates or changes, "disabled" pauses it
  'POST /resend/automations': ['POST /v1/flows', 'POST /v1/flows/:id/activate'],
  'PATCH /resend/automations/:id': [
    'PATCH /v1/flows/:id',
    'POST /v1/flows/:id/activate',
    'POST /v1/flows/:id/pause',
  ],
  // a copy is a new flow
  'POST /resend/automations/:id/duplicate': ['POST /v1/flows'],
  'GET /resend/automations': ['GET /v1/flows'],
  'GET /resend/automations/:id': ['GET /v1/flows/:id'],
  // an enabled automation is paused before it is removed
  'DELETE /resend/automations/:id': ['DELETE /v1/flows/:id', 'POST /v1/flows/:id/pause'],
  'POST /resend/automations/:id/stop': ['POST /v1/flows/:id/pause'],
  'GET /resend/automations/:id/runs': ['GET /v1/flows/:id/enrollments'],
  'GET /resend/automations/:id/runs/:run_id': ['GET /v1/flows/:id/enrollments/:enrollment_id'],

  // the project's request log: what each key's log shows, for every key acting in the project
  'GET /resend/logs': ['GET /v1/api-keys/:id/requests'],
  'GET /resend/logs/:id': ['GET /v1/api-keys/:id/requests'],

  'POST /resend/suppressions': ['POST /v1/suppressions'],
  'GET /resend/suppressions': ['GET /v1/suppressions'],
  'GET /resend/suppressions/:id': ['GET /v1/suppressions'],
  'DELETE /resend/suppressions/:id': ['DELETE /v1/suppressions/:email'],
  'POST /resend/suppressions/batch/add': ['POST /v1/suppressions'],
  'POST /resend/suppressions/batch/remove': ['DELETE /v1/suppressions/:email'],
};

const strictest = (roles: Role[]): Role =>
  roles.reduce((a, b) => (ROLES.indexOf(b) > ROLES.indexOf(a) ? b : a), 'member');

/** The role of `METHOD /v1/path`, as that route declares it; the server does not start without it. */
export function roleOf(app: FastifyInstance, operation: string): Role {
  const [method, url] = operation.split(' ');
  const role = app.declaredRole(method, url);
  if (role === undefined)
    throw new Error(`Resend door: ${operation} is not a registered route (src/http/resend/counterparts.ts)`);
  return role;
}

/**
 * The door's onRoute hook: each operation takes its counterparts' role and (auth.ts) acts for an
 * all-access key in the account's default project when no `X-Project-Id` names one. Routes open to
 * all (the not-found answer) and those that answer 405 to everyone (unsupported.ts) stand for none.
 */
export function adoptCounterpartRoles(app: FastifyInstance) {
  app.addHook('onRoute', (route: RouteOptions) => {
    const auth = route.config?.auth ?? 'none';
    if (auth === 'none') return;
    if (route.config?.unsupported) {
      route.config = { ...route.config, defaultProject: true };
      return;
    }
    const method = [route.method].flat()[0] === 'HEAD' ? 'GET' : [route.method].flat()[0];
    const counterparts = COUNTERPARTS[`${method} ${route.url}`];
    if (!counterparts)
      throw new Error(
        `Resend door: ${method} ${route.url} has no /v1 counterpart in src/http/resend/counterparts.ts, so no role`,
      );
    route.config = {
      ...route.config,
      role: strictest(counterparts.map((c) => roleOf(app, c))),
      counterparts,
      defaultProject: true,
    };
  });
}
