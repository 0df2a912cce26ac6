import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import { createMailboxTransport } from './mailbox.ts';
import { withSimulator } from './simulator.ts';
import { createSmtpRelayTransport } from './smtp-relay.ts';
import type { Transport } from './transport.ts';

/**
 * The configured transport: the SMTP relay when POSTHORN_SMTP_RELAY is set, else the dev mailbox;
 * either way behind the simulator, so addresses at its domain never leave the machine.
 */
export function createTransport(
  config: Config,
  db: Db,
  log: { info: (line: string) => void; warn: (line: string) => void },
): Transport {
  return withSimulator(
    config.smtpRelay
      ? createSmtpRelayTransport(config.smtpRelay, {
          timeoutSeconds: config.smtpRelayTimeoutSeconds,
          warn: log.warn,
        })
      : createMailboxTransport(db, log.info),
  );
}
