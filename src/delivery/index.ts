import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import { createMailboxTransport } from './mailbox.ts';
import { createSmtpRelayTransport } from './smtp-relay.ts';
import type { Transport } from './transport.ts';

/** The configured transport: the SMTP relay when POSTHORN_SMTP_RELAY is set, else the dev mailbox. */
export function createTransport(config: Config, db: Db, log: (line: string) => void): Transport {
  return config.smtpRelay ? createSmtpRelayTransport(config.smtpRelay) : createMailboxTransport(db, log);
}
