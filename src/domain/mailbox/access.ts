import type { Config } from '../../config.ts';
import { routeView } from '../../delivery/routes/view.ts';
import { NotFoundError } from '../core/errors.ts';

/**
 * Who may read the dev mailbox over HTTP. It holds every message the server captured, other
 * people's sign-in codes included, and is read without signing in (a person signing up reads the
 * code there before having a session): so it exists only while mail really is captured (the
 * mailbox is a route), and only for a client on the server's own machine unless the operator opens
 * it (POSTHORN_DEV_MAILBOX).
 */

export type MailboxAvailability = { available: true; reason: null } | { available: false; reason: string };

/** What the door knows of the caller. */
export interface MailboxCaller {
  /** The client is on this machine (a loopback address, seen through the trusted proxies only). */
  local: boolean;
  /** The port the request reached the server on, for the address to show instead. */
  localPort: number | undefined;
}

/** The dev mailbox cannot be read by this caller: a 404 whose message says why and what to do. */
export class MailboxUnavailableError extends NotFoundError {
  constructor(reason: string) {
    super('Dev mailbox');
    this.message = reason;
  }
}

/**
 * Whether the caller may read the dev mailbox, and if not, why. `devMailbox`: the mailbox is one
 * of the server's routes (no relay configured, or a route of type `mailbox`).
 */
export function mailboxAvailability(
  config: Pick<Config, 'devMailboxAccess' | 'routes' | 'routesFile' | 'appUrl'>,
  devMailbox: boolean,
  caller: MailboxCaller,
): MailboxAvailability {
  if (!devMailbox) {
    return {
      available: false,
      reason: routeView(config).file
        ? `Mail leaves through the routes of POSTHORN_ROUTES and none of them is the dev mailbox, so there is no dev mailbox on this server`
        : 'Mail goes to the relay of POSTHORN_SMTP_RELAY, so there is no dev mailbox on this server: mail is kept in one only when no relay is set',
    };
  }
  if (config.devMailboxAccess === 'off') {
    return {
      available: false,
      reason:
        'The dev mailbox is not shown over the web on this server (POSTHORN_DEV_MAILBOX=off): read it with `npx posthorn mailbox` on the server',
    };
  }
  if (config.devMailboxAccess === 'local' && !caller.local) {
    const path = new URL(config.appUrl).pathname.replace(/\/?$/, '/');
    const here = `http://127.0.0.1${caller.localPort ? `:${caller.localPort}` : ''}${path}mailbox`;
    return {
      available: false,
      reason: `The dev mailbox holds every message this server captured, sign-in codes included, so it is shown only on this machine: open the dashboard at ${here} on the server itself, or set POSTHORN_DEV_MAILBOX=open to show it to anyone who reaches the server`,
    };
  }
  return { available: true, reason: null };
}

/** Throws the 404 that says why, unless the caller may read the dev mailbox. */
export function requireMailbox(
  config: Pick<Config, 'devMailboxAccess' | 'routes' | 'routesFile' | 'appUrl'>,
  devMailbox: boolean,
  caller: MailboxCaller,
): void {
  const availability = mailboxAvailability(config, devMailbox, caller);
  if (!availability.available) throw new MailboxUnavailableError(availability.reason);
}
