import { Readable } from 'node:stream';
import SMTPConnection, {
  type SMTPConnectionAuth,
  type SMTPConnectionOptions,
  type SMTPConnectionSendInfo,
} from 'nodemailer/lib/smtp-connection';

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

type Waiter = (resource: Resource | Error) => void;

interface Resource {
  connection: SMTPConnection;
  /** Messages it carried (sent or refused): a reused connection may have been closed by the server in between. */
  carried: number;
  dead: boolean;
  idleSince: number;
  /** Still counted among the pool's open connections. */
  counted: boolean;
}

/**
 * A pool of SMTP connections to one relay, each carrying one message at a time, for messages that
 * are already MIME (composed and DKIM-signed): the bytes go straight to `SMTPConnection.send`, with
 * none of nodemailer's mail composition (its `Mail`/`SMTPPool` parse the raw message again, make a
 * Message-ID for it and run their plugins: a sixth of the worker's CPU in `bench:postfix`). Like
 * nodemailer's pool: a connection the server closed while it was idle is dropped; a
 * message refused by the server leaves its connection usable (RSET); a reused connection that
 * fails before a byte of the message was read sends it again over a new one.
 */
export class SmtpConnectionPool {
  private readonly idle: Resource[] = [];
  /** Sends waiting for a connection: transactional mail's first, then bulk mail's. */
  private readonly waiting: { urgent: Waiter[]; bulk: Waiter[] } = { urgent: [], bulk: [] };
  private open = 0;
  private closed = false;
  /** Bulk sends (marketing, automation) in progress, and those waiting for their share. */
  private bulkInUse = 0;
  private readonly bulkQueue: (() => void)[] = [];

  private readonly options: SMTPConnectionOptions & { auth?: { user: string; pass: string } };
  private readonly maxConnections: number;
  /** A connection idle for longer is closed with QUIT rather than reused. */
  private readonly idleTimeoutMs: number;

  constructor(
    options: SMTPConnectionOptions & { auth?: { user: string; pass: string } },
    maxConnections: number,
    idleTimeoutMs = 30_000,
  ) {
    this.options = options;
    this.maxConnections = maxConnections;
    this.idleTimeoutMs = idleTimeoutMs;
  }

  /**
   * The most connections bulk mail may use at once: all but a tenth of the pool (at least one
   * kept for transactional mail, when the pool has two or more), so a campaign through a slow
   * relay never holds every connection a transactional message needs.
   */
  get bulkLimit(): number {
    return Math.max(1, this.maxConnections - Math.max(1, Math.ceil(this.maxConnections / 10)));
  }

  /**
   * Sends `raw` for `envelope`; rejects with the server's error (its `responseCode` when it
   * answered). `bulk` mail uses at most `bulkLimit` connections and waits behind transactional mail.
   */
  async send(
    envelope: { from: string; to: string[] },
    raw: Buffer,
    opts: { bulk?: boolean; onSession?: () => void } = {},
  ): Promise<SMTPConnectionSendInfo> {
    if (!opts.bulk) return this.sendNow(envelope, raw, false, opts.onSession);
    if (this.bulkInUse >= this.bulkLimit) await new Promise<void>((resolve) => this.bulkQueue.push(resolve));
    else this.bulkInUse++;
    try {
      return await this.sendNow(envelope, raw, true, opts.onSession);
    } finally {
      // the share passes to the next bulk send waiting, or is given back
      const next = this.bulkQueue.shift();
      if (next) next();
      else this.bulkInUse--;
    }
  }

  private async sendNow(
    envelope: { from: string; to: string[] },
    raw: Buffer,
    bulk: boolean,
    onSession?: () => void,
  ): Promise<SMTPConnectionSendInfo> {
    for (let tries = 0; ; tries++) {
      const resource = await this.acquire(bulk).catch((err: SmtpSendError) => {
        // no connection (refused, timed out, the greeting or the login refused): nothing went out
        if (!this.closed) err.notTaken = true;
        throw err;
      });
      onSession?.();
      // read only once the envelope is accepted: whether it was read tells if any byte went out
      const body = new Readable({
        read() {
          this.push(raw);
          this.push(null);
        },
      });
      try {
        const info = await new Promise<SMTPConnectionSendInfo>((resolve, reject) =>
          // a fresh envelope for each try: the connection writes its answers into the one it is given
          resource.connection.send({ from: envelope.from, to: [...envelope.to] }, body, (err, result) =>
            err ? reject(err) : resolve(result as SMTPConnectionSendInfo),
          ),
        );
        resource.carried++;
        this.release(resource);
        return info;
      } catch (err) {
        const e = err as SmtpSendError;
        const refused = (e.code === 'EENVELOPE' || e.code === 'EMESSAGE') && e.responseCode !== 421;
        if (refused && !resource.dead) {
          // the server refused this message; the session itself is fine
          resource.carried++;
          resource.connection.reset((resetErr) =>
            resetErr ? this.discard(resource) : this.release(resource),
          );
        } else {
          this.discard(resource);
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
    this.quit(resource);
  }

  /** Closes every connection; sends after this fail. */
  close(): void {
    this.closed = true;
    for (const resource of this.idle.splice(0)) this.quit(resource);
    for (const waiter of [...this.waiting.urgent.splice(0), ...this.waiting.bulk.splice(0)])
      waiter(new Error('The SMTP pool is closed'));
    for (const next of this.bulkQueue.splice(0)) next();
  }

  private async acquire(bulk: boolean): Promise<Resource> {
    if (this.closed) throw new Error('The SMTP pool is closed');
    for (let resource = this.idle.pop(); resource; resource = this.idle.pop()) {
      if (resource.dead) continue;
      if (Date.now() - resource.idleSince > this.idleTimeoutMs) {
        this.quit(resource);
        continue;
      }
      return resource;
    }
    if (this.open >= this.maxConnections) {
      const got = await new Promise<Resource | Error>((resolve) =>
        (bulk ? this.waiting.bulk : this.waiting.urgent).push(resolve),
      );
      if (got instanceof Error) throw got;
      return got;
    }
    return this.connect();
  }

  private connect(): Promise<Resource> {
    const { auth, ...options } = this.options;
    const connection = new SMTPConnection(options);
    const resource: Resource = { connection, carried: 0, dead: false, idleSince: Date.now(), counted: true };
    this.open++;
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        resource.dead = true;
        connection.close();
        this.forget(resource);
        reject(err);
      };
      // after the connection is set up, its errors end it: a send in progress hears of it through its callback
      connection.on('error', (err: Error) => {
        resource.dead = true;
        if (settled) this.forget(resource);
        fail(err);
      });
      connection.once('end', () => {
        resource.dead = true;
        this.forget(resource);
        fail(new Error('The relay closed the connection'));
      });
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

  private release(resource: Resource): void {
    if (resource.dead || this.closed) {
      this.discard(resource);
      return;
    }
    const waiter = this.nextWaiter();
    if (waiter) {
      waiter(resource);
      return;
    }
    resource.idleSince = Date.now();
    this.idle.push(resource);
  }

  /** A connection that cannot carry another message: closed, and its place given to a waiting send. */
  private discard(resource: Resource): void {
    if (!resource.dead) {
      resource.dead = true;
      resource.connection.close();
    }
    this.forget(resource);
  }

  private quit(resource: Resource): void {
    resource.dead = true;
    resource.connection.quit();
    this.forget(resource);
  }

  private forget(resource: Resource): void {
    const at = this.idle.indexOf(resource);
    if (at !== -1) this.idle.splice(at, 1);
    if (!resource.counted) return;
    resource.counted = false;
    this.open--;
    this.wakeOne();
  }

  /** A send waiting for a connection opens a new one now that there is room. */
  private wakeOne(): void {
    if (this.open >= this.maxConnections || this.closed) return;
    const waiter = this.nextWaiter();
    if (waiter) this.connect().then(waiter, waiter);
  }

  /** The send to give a connection next: transactional mail's before bulk mail's. */
  private nextWaiter(): Waiter | undefined {
    return this.waiting.urgent.shift() ?? this.waiting.bulk.shift();
  }
}
