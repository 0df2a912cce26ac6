import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import SMTPConnection, {
  type SMTPConnectionAuth,
  type SMTPConnectionOptions,
  type SMTPConnectionSendInfo,
} from 'nodemailer/lib/smtp-connection';
import { type Claimant, type PooledSession, SessionPool } from './session-pool.ts';

/**
 * An SMTP error as nodemailer's connection reports it: `code` (EENVELOPE, EMESSAGE, EAUTH, ESOCKET…),
 * the command it answered (`MAIL FROM`, `RCPT TO`, `DATA`, `AUTH PLAIN`, `CONN`…) and the reply.
 */
export type SmtpSendError = Error & {
  code?: string;
  command?: string;
  responseCode?: number;
  response?: string;
  /**
   * Set by the pool: the relay did not take the message (no connection could be opened or logged
   * into, or the connection went before a byte of the message was read), so another route may.
   */
  notTaken?: boolean;
};

/**
 * The connection was gone or going (a 421, a reset or closed socket) rather than the message refused.
 * Not a timeout: a relay that hangs is not asked again at once.
 */
function connectionWasGone(err: SmtpSendError): boolean {
  return err.responseCode === 421 || err.code === 'ECONNECTION' || err.code === 'ESOCKET';
}

interface Resource extends PooledSession {
  connection: SMTPConnection;
}

/** Messages up to this size are written with their final dot at once (below a socket's 16 KiB buffer). */
const ONE_WRITE_BYTES = 12 * 1024;

/**
 * A message as the stream `SMTPConnection.send` reads once the server has said 354, written with
 * its final dot in one write when small (the socket corked from the body's read until the turn
 * after its end): nodemailer's data stream writes them as two, each a system call here and a
 * wake-up and a read at the server. `onRead` is told when the body is read (a byte is going out);
 * `done()` uncorks at once, for a transaction that ended before its dot was written.
 */
export function messageBody(
  connection: SMTPConnection,
  raw: Buffer,
  onRead: () => void = () => {},
): { body: Readable; done(): void } {
  const socket =
    raw.length <= ONE_WRITE_BYTES ? (connection as unknown as { _socket?: Socket })._socket : undefined;
  let corked = false;
  const done = () => {
    if (!corked) return;
    corked = false;
    socket?.uncork();
  };
  const body = new Readable({
    read() {
      onRead();
      if (socket && !corked && !socket.destroyed) {
        socket.cork();
        corked = true;
      }
      this.push(raw);
      this.push(null);
    },
  });
  // the dot is written in the turns that follow the body's end (nodemailer's data stream)
  body.once('end', () => setImmediate(done));
  return { body, done };
}

/** The longest an ended session counts against its cap while its socket has not closed. */
const CLOSE_WAIT_MS = 5_000;

/**
 * Ends a session (QUIT first when `polite`) and resolves once its socket has closed, or after
 * CLOSE_WAIT_MS: until then the server still counts the connection, so it stays counted against
 * the site's cap here too (nodemailer's connection reports its end when it asks to close, not
 * when the socket is gone; another process opening the freed lease at once was one over a
 * provider's cap in bench:direct).
 */
export function endSession(connection: SMTPConnection, polite: boolean): Promise<void> {
  const socket = (connection as unknown as { _socket?: Socket })._socket;
  const closed =
    socket && !socket.destroyed
      ? new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, CLOSE_WAIT_MS);
          timer.unref();
          socket.once('close', () => {
            clearTimeout(timer);
            resolve();
          });
        })
      : Promise.resolve();
  if (polite) connection.quit();
  else connection.close();
  return closed;
}

/**
 * The sessions to one relay, each carrying one message at a time, for messages that are already
 * MIME (composed and DKIM-signed): the bytes go straight to `SMTPConnection.send`, with none of
 * nodemailer's mail composition (its `Mail`/`SMTPPool` parse the raw message again, make a
 * Message-ID for it and run their plugins: a sixth of the worker's CPU in `bench:postfix`). Which
 * send gets a session is the one session pool's (session-pool.ts: the service's own mail first,
 * then transactional, bulk at most all but a tenth of the sessions, fair between projects). Like
 * nodemailer's pool: a session the server closed while it was idle is dropped; a message refused
 * by the server leaves its session usable (RSET); a reused session that fails before a byte of the
 * message was read sends it again over a new one.
 */
export class SmtpConnectionPool {
  private readonly pool: SessionPool<Resource>;
  private closed = false;
  private readonly options: SMTPConnectionOptions & { auth?: { user: string; pass: string } };
  private readonly maxConnections: number;

  constructor(
    options: SMTPConnectionOptions & { auth?: { user: string; pass: string } },
    maxConnections: number,
    idleTimeoutMs = 30_000,
  ) {
    this.options = options;
    this.maxConnections = maxConnections;
    this.pool = new SessionPool<Resource>({
      cap: () => maxConnections,
      // a campaign through a slow relay never holds every session a transactional message needs
      bulkShare: 0.9,
      idleMs: idleTimeoutMs,
      end: (resource, polite) => endSession(resource.connection, polite),
    });
  }

  /** The most connections bulk mail may use at once: all but a tenth of the pool (at least one left). */
  get bulkLimit(): number {
    return this.pool.bulkLimit;
  }

  /**
   * Sends `raw` for `envelope`; rejects with the server's error (its `responseCode` when it
   * answered). `claimant`: who sends (its class and project), which decides its turn.
   */
  async send(
    envelope: { from: string; to: string[] },
    raw: Buffer,
    opts: { claimant?: Claimant; onSession?: () => void } = {},
  ): Promise<SMTPConnectionSendInfo> {
    const claimant = opts.claimant ?? { urgency: 'transactional', project: null };
    for (let tries = 0; ; tries++) {
      const resource = await this.pool
        .take(
          claimant,
          () => true,
          () => this.connect(),
        )
        .catch((err: SmtpSendError) => {
          // no connection (refused, timed out, the greeting or the login refused): nothing went out
          if (!this.closed) err.notTaken = true;
          throw err;
        });
      opts.onSession?.();
      // read only once the envelope is accepted: whether it was read tells if any byte went out
      const { body, done } = messageBody(resource.connection, raw);
      try {
        const info = await new Promise<SMTPConnectionSendInfo>((resolve, reject) =>
          // a fresh envelope for each try: the connection writes its answers into the one it is given
          resource.connection.send({ from: envelope.from, to: [...envelope.to] }, body, (err, result) =>
            err ? reject(err) : resolve(result as SMTPConnectionSendInfo),
          ),
        );
        resource.carried++;
        this.pool.release(resource);
        return info;
      } catch (err) {
        done();
        const e = err as SmtpSendError;
        const refused = (e.code === 'EENVELOPE' || e.code === 'EMESSAGE') && e.responseCode !== 421;
        if (refused && !resource.dead) {
          // the server refused this message; the session itself is fine
          resource.carried++;
          resource.connection.reset((resetErr) =>
            resetErr ? this.pool.drop(resource) : this.pool.release(resource),
          );
        } else {
          this.pool.drop(resource);
          // a reused connection the server had closed (a restart closes them all) before a byte
          // of the message went out: another try, over the next connection or a new one
          if (
            resource.carried > 0 &&
            tries < this.maxConnections &&
            !body.readableDidRead &&
            connectionWasGone(e)
          )
            continue;
          if (!body.readableDidRead && connectionWasGone(e)) e.notTaken = true;
        }
        throw err;
      }
    }
  }

  /**
   * Opens a connection of its own (greeting, EHLO, login) and closes it with QUIT: whether the relay
   * takes connections again, without sending anything.
   */
  async probe(): Promise<void> {
    const resource = await this.connect();
    resource.connection.quit();
  }

  /** Closes every connection; sends after this fail. */
  close(): void {
    this.closed = true;
    this.pool.close();
  }

  /** A new session (greeting, EHLO, login); the pool counts it. */
  private connect(): Promise<Resource> {
    const { auth, ...options } = this.options;
    const connection = new SMTPConnection(options);
    const resource: Resource = { connection, carried: 0, dead: false, idleTimer: null };
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (err: Error) => {
        // once set up, a session's errors end it: a send in progress hears of it through its callback
        if (settled) {
          this.pool.drop(resource);
          return;
        }
        settled = true;
        resource.dead = true;
        connection.close();
        reject(err);
      };
      connection.on('error', fail);
      connection.once('end', () => fail(new Error('The relay closed the connection')));
      connection.connect((err) => {
        if (err) return fail(err);
        const ready = () => {
          if (settled) return;
          settled = true;
          resolve(resource);
        };
        if (!auth || !connection.allowsAuth) return ready();
        const login: SMTPConnectionAuth = {
          user: auth.user,
          credentials: { user: auth.user, pass: auth.pass },
        };
        connection.login(login, (loginErr) => (loginErr ? fail(loginErr) : ready()));
      });
    });
  }
}
