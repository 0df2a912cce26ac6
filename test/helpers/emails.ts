import type { Selectable } from 'kysely';
import type { SystemEmailStatus, SystemEmailsTable } from '../../src/db/schema.ts';
import type { TestServer } from './server.ts';

export { expectError } from './assertions.ts';

export const FROM = 'Posthorn Tests <onboarding@posthorn.localhost>';

/** Polls GET /v1/emails/{id} until the status is reached (or fails with the last state seen). */
export async function waitForStatus(
  server: TestServer,
  key: string,
  id: string,
  status: string,
  timeoutMs = 20_000,
) {
  const deadline = Date.now() + timeoutMs;
  let last: any;
  while (Date.now() < deadline) {
    last = (await server.call('GET', `/v1/emails/${id}`, { key })).body;
    if (last.status === status) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `email ${id} never reached ${status}; last: ${JSON.stringify(last?.status)} ${JSON.stringify(last?.events)}`,
  );
}

export async function countEmails(server: TestServer): Promise<number> {
  const row = await server.runtime.ctx.db
    .selectFrom('emails')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Polls the outbox row of the newest system email to an address until the status is reached. */
export async function waitForSystemEmail(
  server: TestServer,
  to: string,
  status: SystemEmailStatus,
  timeoutMs = 20_000,
): Promise<Selectable<SystemEmailsTable>> {
  const deadline = Date.now() + timeoutMs;
  let last: Selectable<SystemEmailsTable> | undefined;
  while (Date.now() < deadline) {
    last = await server.runtime.ctx.db
      .selectFrom('system_emails')
      .selectAll()
      .where('to_address', '=', to)
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
    if (last?.status === status) return last;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(
    `no system email to ${to} reached ${status}; last: ${JSON.stringify(last && { ...last, raw: undefined })}`,
  );
}
