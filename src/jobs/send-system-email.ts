import type { Task } from 'graphile-worker';
import type { DeliveryDeps } from '../domain/emails/hand-over.ts';
import { deliverSystemEmail } from '../domain/emails/system-mail.ts';

/** Delivers one of the service's own messages (the payload is its outbox row id; see domain/emails/system-mail.ts). */
export function sendSystemEmailTask(deps: DeliveryDeps): Task<'send_system_email'> {
  return async (payload) => {
    await deliverSystemEmail(deps, payload.id);
  };
}
