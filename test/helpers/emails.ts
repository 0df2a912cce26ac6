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
