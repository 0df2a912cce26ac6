import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.ts';
import { SmtpConnectionPool, type SmtpSendError } from '../../src/delivery/smtp-pool.ts';
import { eventually } from '../helpers/eventually.ts';

/** A real SMTP server on loopback that counts its connections and keeps what it receives. */
async function relay(options: Partial<SMTPServerOptions> = {}, listenPort = 0) {
  const state = { connections: 0, open: 0, maxOpen: 0, received: [] as { to: string[]; raw: string }[] };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    closeTimeout: 1000,
    onConnect(_session, callback) {
      state.connections++;
      state.open++;
      state.maxOpen = Math.max(state.maxOpen, state.open);
      callback();
    },
    onClose() {
      state.open--;
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        state.received.push({
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString(),
        });
        // a little time per message, so sends overlap and the pool has to share its connections
        setTimeout(() => callback(), 5);
      });
    },
    ...options,
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(listenPort, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { server, port, state, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const message = (n: number) =>
  Buffer.from(
    `From: a@example.com\r\nTo: b${n}@example.org\r\nSubject: ${n}\r\n\r\n.line starting with a dot ${n}\r\n`,
  );

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function poolFor(port: number, max: number, extra: { idleTimeoutMs?: number; socketTimeout?: number } = {}) {
  const pool = new SmtpConnectionPool(
    { host: '127.0.0.1', port, secure: false, ignoreTLS: true, socketTimeout: extra.socketTimeout },
    max,
    extra.idleTimeoutMs,
  );
  cleanup.push(() => pool.close());
  return pool;
}

describe('SmtpConnectionPool (the relay transport under the worker)', () => {
  it('carries many messages over at most maxConnections reused connections, bytes intact', async () => {
    const r = await relay();
    cleanup.push(r.close);
    const pool = poolFor(r.port, 3);
    const infos = await Promise.all(
      Array.from({ length: 30 }, (_, n) =>
        pool.send({ from: 'a@example.com', to: [`b${n}@example.org`] }, message(n)),
      ),
    );
    expect(infos.every((i) => i.accepted.length === 1 && /^250/.test(i.response))).toBe(true);
    expect(r.state.received).toHaveLength(30);
    expect(r.state.connections).toBeLessThanOrEqual(3);
    expect(r.state.maxOpen).toBeLessThanOrEqual(3);
    // dot-stuffed on the wire and unstuffed by the server: the line arrives as it was written
    const seven = r.state.received.find((m) => m.to[0] === 'b7@example.org');
    expect(seven?.raw).toContain('\r\n.line starting with a dot 7');
  });

  it('keeps a tenth of its connections (at least one) for transactional mail: bulk mail waits behind it', async () => {
    // the relay holds each message until released, so the pool's connections stay busy
    const held: (() => void)[] = [];
    const r = await relay({
      onData(stream, session, callback) {
        stream.resume();
        stream.on('end', () => {
          r.state.received.push({ to: session.envelope.rcptTo.map((t) => t.address), raw: '' });
          held.push(() => callback());
        });
      },
    });
    cleanup.push(r.close);
    const pool = poolFor(r.port, 4);
    expect(pool.bulkLimit).toBe(3);
    const send = (to: string, bulk: boolean) =>
      pool
        .send({ from: 'a@example.com', to: [to] }, message(0), {
          claimant: { urgency: bulk ? 'bulk' : 'transactional', project: 'p' },
        })
        .then(() => to);
    const done: string[] = [];
    const bulk = Array.from({ length: 8 }, (_, n) =>
      send(`bulk${n}@example.org`, true).then((to) => done.push(to)),
    );
    // three bulk messages hold three connections; the other five wait for their share
    await eventually(() => expect(r.state.received).toHaveLength(3));
    // a transactional message takes the fourth connection at once
    const urgent = send('urgent@example.org', false).then((to) => done.push(to));
    await eventually(() => expect(r.state.received.map((m) => m.to[0])).toContain('urgent@example.org'));
    expect(r.state.received.filter((m) => m.to[0].startsWith('bulk'))).toHaveLength(3);
    // released one at a time, bulk never takes the fourth connection
    while (held.length > 0 || r.state.received.length < 9) {
      await eventually(() => expect(held.length).toBeGreaterThan(0));
      (held.shift() as () => void)();
      expect(r.state.maxOpen).toBeLessThanOrEqual(4);
    }
    await Promise.all([...bulk, urgent]);
    expect(done).toHaveLength(9);
    expect(r.state.received).toHaveLength(9);
  });

  it('upgrades with STARTTLS when the relay offers it and logs in when it asks for AUTH', async () => {
    const logins: string[] = [];
    const r = await relay({
      disabledCommands: [], // STARTTLS offered, with smtp-server's own self-signed certificate
      authOptional: false,
      onAuth(auth, session, callback) {
        logins.push(`${auth.username}:${auth.password}:${session.secure ? 'tls' : 'plain'}`);
        if (auth.password !== 'right') return callback(new Error('Invalid username or password'));
        callback(null, { user: auth.username });
      },
    });
    cleanup.push(r.close);
    const pool = (pass: string) => {
      const p = new SmtpConnectionPool(
        {
          host: '127.0.0.1',
          port: r.port,
          secure: false,
          tls: { rejectUnauthorized: false },
          auth: { user: 'relay', pass },
        },
        2,
      );
      cleanup.push(() => p.close());
      return p;
    };
    const info = await pool('right').send({ from: 'a@example.com', to: ['b1@example.org'] }, message(1));
    expect(info.accepted).toEqual(['b1@example.org']);
    const refused = (await pool('wrong')
      .send({ from: 'a@example.com', to: ['b2@example.org'] }, message(2))
      .catch((e) => e)) as SmtpSendError;
    expect(refused.responseCode).toBe(535);
    expect(logins).toEqual(['relay:right:tls', 'relay:wrong:tls']);
    expect(r.state.received.map((m) => m.to[0])).toEqual(['b1@example.org']);
  });

  it('a refused message rejects with the reply, and its connection carries the next message', async () => {
    const r = await relay({
      onRcptTo(address, _session, callback) {
        if (address.address.startsWith('nobody@'))
          return callback(Object.assign(new Error('5.1.1 No such user'), { responseCode: 550 }));
        if (address.address.startsWith('full@'))
          return callback(Object.assign(new Error('4.2.2 Mailbox full'), { responseCode: 452 }));
        callback();
      },
    });
    cleanup.push(r.close);
    const pool = poolFor(r.port, 1);
    const refused = await pool
      .send({ from: 'a@example.com', to: ['nobody@example.org'] }, message(1))
      .catch((e) => e);
    expect((refused as SmtpSendError).responseCode).toBe(550);
    const later = await pool
      .send({ from: 'a@example.com', to: ['full@example.org'] }, message(2))
      .catch((e) => e);
    expect((later as SmtpSendError).responseCode).toBe(452);
    // one recipient of two refused: sent, with the refusal beside it
    const partly = await pool.send(
      { from: 'a@example.com', to: ['b3@example.org', 'nobody@example.org'] },
      message(3),
    );
    expect(partly.accepted).toEqual(['b3@example.org']);
    expect(partly.rejectedErrors?.[0]).toMatchObject({ recipient: 'nobody@example.org', responseCode: 550 });
    expect(r.state.received.map((m) => m.to)).toEqual([['b3@example.org']]);
    expect(r.state.connections).toBe(1);
  });

  it('a connection the relay closed while idle is not used again: the next message opens a new one', async () => {
    const r = await relay({ socketTimeout: 300 }); // the relay drops a connection idle for 300 ms
    cleanup.push(r.close);
    const pool = poolFor(r.port, 2);
    await pool.send({ from: 'a@example.com', to: ['b1@example.org'] }, message(1));
    await eventually(() => r.state.connections === 1 && r.state.open === 0, {
      message: 'the relay did not close the idle connection',
    });
    await pool.send({ from: 'a@example.com', to: ['b2@example.org'] }, message(2));
    expect(r.state.received).toHaveLength(2);
    expect(r.state.connections).toBe(2);
  });

  it('a reused connection that the relay ends before the message (421 at MAIL FROM) sends it over a new one', async () => {
    const r = await relay({
      onMailFrom(_address, session, callback) {
        // the second message on any connection: "closing", as a relay going down says it
        if (session.transaction > 1)
          return callback(Object.assign(new Error('4.3.2 Shutting down'), { responseCode: 421 }));
        callback();
      },
    });
    cleanup.push(r.close);
    const pool = poolFor(r.port, 1);
    await pool.send({ from: 'a@example.com', to: ['b1@example.org'] }, message(1));
    const info = await pool.send({ from: 'a@example.com', to: ['b2@example.org'] }, message(2));
    expect(info.accepted).toEqual(['b2@example.org']);
    expect(r.state.received.map((m) => m.to[0])).toEqual(['b1@example.org', 'b2@example.org']);
    expect(r.state.connections).toBe(2);
  });

  it('a 421 on a new connection is not tried again: the caller defers the message', async () => {
    const r = await relay({
      onMailFrom(_address, _session, callback) {
        callback(Object.assign(new Error('4.3.2 Try later'), { responseCode: 421 }));
      },
    });
    cleanup.push(r.close);
    const pool = poolFor(r.port, 2);
    const err = (await pool
      .send({ from: 'a@example.com', to: ['b1@example.org'] }, message(1))
      .catch((e) => e)) as SmtpSendError;
    expect(err.responseCode).toBe(421);
    expect(r.state.connections).toBe(1);
    expect(r.state.received).toHaveLength(0);
  });

  it('no relay listening: a connection error without a reply code, and the pool still works after', async () => {
    const port = await freePort();
    const pool = poolFor(port, 2);
    const errors = await Promise.all(
      [1, 2, 3].map((n) =>
        pool.send({ from: 'a@example.com', to: [`b${n}@example.org`] }, message(n)).catch((e) => e),
      ),
    );
    for (const e of errors as SmtpSendError[]) {
      expect(e).toBeInstanceOf(Error);
      expect(e.responseCode).toBeUndefined();
    }
    // the relay comes up on that port: the same pool delivers
    const up = await relay({ closeTimeout: 1000 }, port);
    cleanup.push(up.close);
    const info = await pool.send({ from: 'a@example.com', to: ['b4@example.org'] }, message(4));
    expect(info.accepted).toEqual(['b4@example.org']);
  });

  it('a relay that accepts and then says nothing: the send fails after the timeout, the pool is not stuck', async () => {
    const net = await import('node:net');
    const silent = net.createServer(() => {}); // accepts, never greets
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise<void>((resolve) => silent.close(() => resolve())));
    const port = (silent.address() as AddressInfo).port;
    const pool = new SmtpConnectionPool(
      { host: '127.0.0.1', port, secure: false, ignoreTLS: true, greetingTimeout: 300, socketTimeout: 300 },
      1,
    );
    cleanup.push(() => pool.close());
    const started = Date.now();
    const results = await Promise.all(
      [1, 2].map((n) =>
        pool.send({ from: 'a@example.com', to: [`b${n}@example.org`] }, message(n)).catch((e) => e),
      ),
    );
    for (const e of results as SmtpSendError[]) expect(e.responseCode).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('after close(), sends are refused and no connection stays open', async () => {
    const r = await relay();
    cleanup.push(r.close);
    const pool = poolFor(r.port, 2);
    await pool.send({ from: 'a@example.com', to: ['b1@example.org'] }, message(1));
    pool.close();
    await expect(pool.send({ from: 'a@example.com', to: ['b2@example.org'] }, message(2))).rejects.toThrow(
      /closed/,
    );
    await eventually(() => expect(r.state.open).toBe(0));
  });
});
