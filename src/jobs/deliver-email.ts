import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import { deliverEmails } from '../domain/emails/deliver.ts';
import type { DeliveryDeps } from '../domain/emails/hand-over.ts';

/** Delivers accepted messages (the payload holds their ids only; see domain/emails/deliver.ts). */
export function deliverEmailTask(
  deps: DeliveryDeps & { log: Logger },
): Task<'deliver_email'> & Task<'deliver_transactional'> {
  return async (payload) => {
    const ids = payload.ids ?? [];
    const attempted = await deliverEmails(deps, ids);
    if (attempted > 0) deps.log.debug({ emails: attempted }, 'delivery batch done');
  };
}
