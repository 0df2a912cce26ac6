import type pg from 'pg';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { Secrets } from './secrets.ts';

// Core declares what it needs of the shared writers and imports no service: the classes that
// implement them (emails/email-writer.ts, audience/events.ts) type what they carry.

/** Commits one write of accepted mail and resolves once it is durable. */
export interface AcceptWriter<Write = unknown> {
  submit(write: Write): Promise<void>;
}

/** Records tracked events and resolves with their results once committed; closed at shutdown. */
export interface EventSink<Event = unknown, Result = unknown> {
  track(events: Event[]): Promise<Result[]>;
  close(): Promise<void>;
}

/** What domain services need: the database, the server secrets and the configuration. */
export interface DomainContext {
  db: Db;
  pool: pg.Pool;
  secrets: Secrets;
  config: Config;
  /** Merges concurrent accepts into shared transactions (group commit); absent = one transaction each. */
  emailWriter?: AcceptWriter;
  /** Merges concurrent tracked events into shared transactions. */
  eventTracker?: EventSink;
}
