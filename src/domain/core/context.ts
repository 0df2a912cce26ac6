import type pg from 'pg';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { EventTracker } from '../audience/events.ts';
import type { EmailWriter } from '../emails/email-writer.ts';
import type { Secrets } from './secrets.ts';

/** What domain services need: the database, the server secrets and the configuration. */
export interface DomainContext {
  db: Db;
  pool: pg.Pool;
  secrets: Secrets;
  config: Config;
  /** Merges concurrent accepts into shared transactions (group commit); absent = one transaction each. */
  emailWriter?: EmailWriter;
  /** Merges concurrent tracked events into shared transactions. */
  eventTracker?: EventTracker;
  /** The submission ports this process listens on, when it runs the smtp role (set once bound). */
  smtpPorts?: { port: number; tls_port: number | null };
}
