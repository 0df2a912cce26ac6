import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { chooseRoute, possibleRoutes } from '../../src/delivery/routes/choose.ts';
import { defaultRoutes, parseRoutes, RoutesError } from '../../src/delivery/routes/config.ts';

const PROJECT = '0b4f3a52-9a3c-4f55-8d2e-1f6b7c8d9e0a';

/** The example, without the SES route (refused in this version). */
const example = () => ({
  routes: {
    relay: {
      type: 'smtp',
      url: 'smtp://user:pass@relay.example.net:587',
      tags: 'none',
      rate_per_second: 200,
    },
    backup: {
      type: 'smtp',
      url: 'smtps://backup.example.net',
      pool_size: 4,
      timeout_seconds: 20,
      tags: 'mailgun',
    },
    dev: { type: 'mailbox' },
  },
  rules: [
    { match: { stream: 'transactional' }, routes: ['relay', 'backup'] },
    { match: { recipient_domain: 'Example.org' }, routes: ['backup'] },
    { match: { project_id: PROJECT, domain: 'news.example.com' }, routes: ['dev'] },
    { match: {}, routes: ['backup', 'relay'] },
  ],
});

function problemsOf(json: unknown): string[] {
  try {
    parseRoutes(json);
  } catch (err) {
    if (err instanceof RoutesError) return err.problems;
    throw err;
  }
  throw new Error('parsed without a problem');
}

describe('parseRoutes', () => {
  it('reads routes with their defaults and rules with their matches', () => {
    const parsed = parseRoutes(example());
    expect(parsed.routes.get('relay')).toEqual({
      type: 'smtp',
      url: 'smtp://user:pass@relay.example.net:587',
      poolSize: 10,
      timeoutSeconds: 60,
      ratePerSecond: 200,
      ratePerHour: null,
      tags: 'none',
      health: { unhealthyAfter: 3, probeSeconds: 15 },
    });
    expect(parsed.routes.get('backup')).toMatchObject({ poolSize: 4, timeoutSeconds: 20, tags: 'mailgun' });
    expect(parsed.routes.get('dev')).toEqual({ type: 'mailbox' });
    expect(parsed.rules.map((r) => r.match)).toEqual([
      { stream: 'transactional' },
      { recipientDomain: 'example.org' },
      { projectId: PROJECT, domain: 'news.example.com' },
      {},
    ]);
    expect(parsed.rules[0].routes).toEqual(['relay', 'backup']);
  });

  it('names the key path and the problem of each error, all at once', () => {
    const file = example() as any;
    file.routes.relay.url = 'http://relay.example.net';
    file.routes.backup.pool_size = 0;
    file.routes.backup.tags = 'aws';
    file.routes.backup.colour = 'blue';
    file.rules[1].routes = ['x'];
    file.rules[2].match.stream = 'bulk';
    file.rules[2].match.project_id = 'project-1';
    file.extra = true;
    expect(problemsOf(file)).toEqual([
      'extra: unknown key (expected one of routes, rules)',
      'routes.relay.url: must be smtp:// or smtps:// with a host, like smtp://user:pass@host:587',
      'routes.backup.colour: unknown key (expected one of type, url, pool_size, timeout_seconds, rate_per_second, rate_per_hour, tags, configuration_set, unhealthy_after, probe_seconds)',
      'routes.backup.pool_size: must be a whole number from 1 to 1000',
      'routes.backup.tags: must be one of ses, mailgun, postmark, sendgrid, none',
      'rules[1].routes[0]: no route named "x"',
      'rules[2].match.stream: must be one of transactional, marketing, automation',
      'rules[2].match.project_id: must be a project id (a UUID)',
    ]);
  });

  it('refuses missing parts, bad types and a route listed twice', () => {
    expect(problemsOf([])).toEqual(['the file must hold an object with "routes" and "rules"']);
    expect(problemsOf({})).toEqual(['routes: is required', 'rules: is required']);
    expect(
      problemsOf({
        routes: { a: { type: 'smtp' }, 'b c': { type: 'mailbox' }, d: { type: 'pigeon' }, e: 3 },
        rules: [{ match: { recipient_domain: 'not a domain' }, routes: ['a', 'a', 7] }, { routes: [] }],
      }),
    ).toEqual([
      'routes.a.url: is required',
      'routes.b c: a route name is 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit',
      'routes.d.type: must be one of smtp, ses, direct, mailbox, simulated',
      'routes.e: must be an object with a "type"',
      'rules[0].match.recipient_domain: must be a domain name like example.org',
      'rules[0].routes[1]: route "a" is listed twice',
      'rules[0].routes[2]: must be a route name',
      'rules[1].match: is required ({} matches every message)',
      'rules[1].routes: must be a non-empty list of route names',
      'rules[1].match: the last rule must match every message ("match": {}), so that no message is left without a route',
    ]);
  });

  it('refuses a file whose last rule does not match every message', () => {
    const file = example();
    file.rules.pop();
    expect(problemsOf(file)).toEqual([
      'rules[2].match: the last rule must match every message ("match": {}), so that no message is left without a route',
    ]);
  });

  it('reads a rate per hour beside the rate per second', () => {
    const file = example();
    Object.assign(file.routes.backup, { rate_per_hour: 20_000 });
    expect(parseRoutes(file).routes.get('backup')).toMatchObject({
      ratePerSecond: null,
      ratePerHour: 20_000,
    });
    Object.assign(file.routes.backup, { rate_per_hour: 2.5 });
    expect(problemsOf(file)).toEqual([
      'routes.backup.rate_per_hour: must be a whole number of messages per hour above 0',
    ]);
  });

  it('reads when a relay is judged unhealthy and how often it is probed', () => {
    const file = example();
    Object.assign(file.routes.backup, { unhealthy_after: 5, probe_seconds: 2 });
    expect(parseRoutes(file).routes.get('backup')).toMatchObject({
      health: { unhealthyAfter: 5, probeSeconds: 2 },
    });
    Object.assign(file.routes.backup, { unhealthy_after: 0, probe_seconds: 'often' });
    expect(problemsOf(file)).toEqual([
      'routes.backup.unhealthy_after: must be a whole number from 1 to 1000',
      'routes.backup.probe_seconds: must be a whole number from 1 to 3600',
    ]);
  });

  it('takes an SES configuration set only on a relay whose tags are SES tags', () => {
    const file = example();
    Object.assign(file.routes.relay, { tags: 'ses', configuration_set: 'posthorn-prod' });
    expect(parseRoutes(file).routes.get('relay')).toMatchObject({
      tags: 'ses',
      configurationSet: 'posthorn-prod',
    });
    Object.assign(file.routes.relay, { configuration_set: 'has spaces' });
    Object.assign(file.routes.backup, { configuration_set: 'posthorn' });
    expect(problemsOf(file)).toEqual([
      'routes.relay.configuration_set: must be an SES configuration set name (letters, digits, "_", "-")',
      'routes.backup.configuration_set: is only for a relay with "tags": "ses"',
    ]);
  });

  it('reads an SES route with its keys and defaults', () => {
    const file = example() as any;
    file.routes.ses = {
      type: 'ses',
      region: 'eu-west-1',
      access_key_id: 'AKIA',
      secret_access_key: 'secret',
      configuration_set: 'posthorn',
      endpoint: 'http://127.0.0.1:8005',
    };
    file.rules[3].routes = ['ses', 'relay'];
    const parsed = parseRoutes(file);
    expect(parsed.routes.get('ses')).toEqual({
      type: 'ses',
      region: 'eu-west-1',
      accessKeyId: 'AKIA',
      secretAccessKey: 'secret',
      configurationSet: 'posthorn',
      endpoint: 'http://127.0.0.1:8005',
      poolSize: 10,
      timeoutSeconds: 60,
      ratePerSecond: null,
      ratePerHour: null,
      health: { unhealthyAfter: 3, probeSeconds: 15 },
    });
    expect(parsed.rules[3].routes).toEqual(['ses', 'relay']);
    file.routes.ses = {
      type: 'ses',
      region: 'eu-west-1',
      access_key_id: 'AKIA',
      secret_access_key: 'secret',
      pool_size: 50,
      timeout_seconds: 15,
      rate_per_second: 14,
    };
    expect(parseRoutes(file).routes.get('ses')).toEqual({
      type: 'ses',
      region: 'eu-west-1',
      accessKeyId: 'AKIA',
      secretAccessKey: 'secret',
      poolSize: 50,
      timeoutSeconds: 15,
      ratePerSecond: 14,
      ratePerHour: null,
      health: { unhealthyAfter: 3, probeSeconds: 15 },
    });
  });

  it("names an SES route's problems", () => {
    const file = example() as any;
    file.rules[3].routes = ['ses', 'relay'];
    file.routes.ses = { type: 'ses', region: 'eu-west-1', key: 'x' };
    expect(problemsOf(file)).toEqual([
      'routes.ses.key: unknown key (expected one of type, region, access_key_id, secret_access_key, endpoint, configuration_set, pool_size, timeout_seconds, rate_per_second, rate_per_hour, unhealthy_after, probe_seconds)',
      'routes.ses.access_key_id: is required',
      'routes.ses.secret_access_key: is required',
    ]);
    file.routes.ses = {
      type: 'ses',
      region: 'Ireland',
      access_key_id: 'AKIA',
      secret_access_key: '',
      endpoint: 'ftp://ses.example.com',
      configuration_set: 'has spaces',
      pool_size: 0,
      rate_per_second: -1,
    };
    expect(problemsOf(file)).toEqual([
      'routes.ses.region: must be an AWS region like eu-west-1',
      'routes.ses.secret_access_key: must be a non-empty string',
      'routes.ses.endpoint: must be an http(s) URL, like https://email.eu-west-1.amazonaws.com',
      'routes.ses.configuration_set: must be an SES configuration set name (letters, digits, "_", "-")',
      'routes.ses.pool_size: must be a whole number from 1 to 1000',
      'routes.ses.rate_per_second: must be a number of messages per second above 0',
    ]);
  });
});

describe('a direct route', () => {
  it("refuses a source address's warm-up start_date the calendar does not have (JavaScript reads 2026-02-30 as March 2nd)", () => {
    const file = {
      routes: {
        direct: {
          type: 'direct',
          source_addresses: [
            { address: '192.0.2.10', ehlo: 'mta1.example.com', warmup: { start_date: '2026-02-30' } },
            { address: '192.0.2.11', ehlo: 'mta2.example.com', warmup: { start_date: '2028-02-29' } },
          ],
        },
      },
      rules: [{ match: {}, routes: ['direct'] }],
    };
    expect(problemsOf(file)).toEqual([
      'routes.direct.source_addresses[0].warmup.start_date: must be a day of the calendar as YYYY-MM-DD',
    ]);
  });

  it('reads its source addresses, its sites by MX host name and its defaults', () => {
    const config = parseRoutes({
      routes: {
        direct: {
          type: 'direct',
          source_addresses: [{ address: '203.0.113.10', ehlo: 'MTA1.example.com' }],
          sites: {
            'Gmail-SMTP-in.l.google.com.': {
              max_connections: 10,
              messages_per_connection: 100,
              messages_per_hour: 20000,
            },
          },
        },
      },
      rules: [{ match: {}, routes: ['direct'] }],
    });
    expect(config.routes.get('direct')).toEqual({
      type: 'direct',
      sourceAddresses: [{ address: '203.0.113.10', ehlo: 'mta1.example.com' }],
      sites: new Map([
        [
          'gmail-smtp-in.l.google.com',
          { maxConnections: 10, messagesPerConnection: 100, messagesPerHour: 20000 },
        ],
      ]),
      port: 25,
      timeoutSeconds: 300,
      transactionTimeoutSeconds: 600,
      phaseTimeouts: { mail: 300, rcpt: 300, data: 120, dataBlock: 180, dataDone: 600 },
      allowNetworks: [],
      ratePerSecond: null,
      ratePerHour: null,
      health: { unhealthyAfter: 3, probeSeconds: 15 },
    });
  });

  it('names each problem of its addresses and sites', () => {
    let problems: string[] = [];
    try {
      parseRoutes({
        routes: {
          direct: {
            type: 'direct',
            source_addresses: [{ address: 'mta1', ehlo: 'no_dots' }, 'x'],
            sites: {
              'not a host': { max_connections: 0, burst: 1 },
              'mx.example.org': { retry_schedule: [0, 'x'] },
            },
            port: 0,
          },
        },
        rules: [{ match: {}, routes: ['direct'] }],
      });
    } catch (err) {
      problems = (err as RoutesError).problems;
    }
    expect(problems).toEqual([
      'routes.direct.source_addresses[0].address: must be an IPv4 or IPv6 address of this machine',
      'routes.direct.source_addresses[0].ehlo: must be a fully qualified host name, like mta1.example.com',
      'routes.direct.source_addresses[1]: must be an object like {"address": "203.0.113.10", "ehlo": "mta1.example.com"}',
      "routes.direct.sites.not a host: must be named by one of the site's MX host names",
      'routes.direct.sites.not a host.burst: unknown key (expected one of max_connections, messages_per_connection, messages_per_hour, retry_schedule)',
      'routes.direct.sites.not a host.max_connections: must be a whole number from 1 to 1000',
      'routes.direct.sites.mx.example.org.retry_schedule: must be a list of whole seconds from 1 to 86400, like [300, 900, 3600]',
      'routes.direct.port: must be a whole number from 1 to 65535',
    ]);
  });
});

describe("the README's example", () => {
  it('is a routes file that parses', () => {
    const readme = readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');
    const block = /```json\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## Routes')));
    const parsed = parseRoutes(JSON.parse(block?.[1] ?? 'null'));
    expect([...parsed.routes.keys()]).toEqual(['relay', 'backup', 'ses', 'dev']);
    expect(parsed.routes.get('ses')).toMatchObject({ type: 'ses', configurationSet: 'posthorn' });
    expect(parsed.rules.at(-1)).toEqual({ match: {}, routes: ['backup', 'relay'] });
  });

  it('has a direct route that parses', () => {
    const readme = readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');
    const block = /```json\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('**Direct delivery.**')));
    const parsed = parseRoutes(
      JSON.parse(`{"routes": {${block?.[1]}}, "rules": [{"match": {}, "routes": ["direct"]}]}`),
    );
    expect(parsed.routes.get('direct')).toMatchObject({
      type: 'direct',
      sourceAddresses: [{ address: '203.0.113.10', ehlo: 'mta1.example.com' }],
    });
  });
});

describe('chooseRoute', () => {
  const routes = parseRoutes(example());
  const message = {
    stream: 'marketing' as const,
    projectId: '11111111-2222-4333-8444-555555555555',
    fromDomain: 'example.com',
    recipientDomain: 'gmail.com',
  };

  it('answers the routes of the first rule that fits, in their order', () => {
    expect(
      chooseRoute(routes, { ...message, stream: 'transactional', recipientDomain: 'example.org' }),
    ).toEqual(['relay', 'backup']);
    expect(chooseRoute(routes, { ...message, recipientDomain: 'EXAMPLE.org' })).toEqual(['backup']);
    expect(chooseRoute(routes, message)).toEqual(['backup', 'relay']);
  });

  it('needs every key of a match to fit', () => {
    expect(chooseRoute(routes, { ...message, projectId: PROJECT, fromDomain: 'News.Example.com' })).toEqual([
      'dev',
    ]);
    expect(chooseRoute(routes, { ...message, projectId: PROJECT })).toEqual(['backup', 'relay']);
    expect(chooseRoute(routes, { ...message, fromDomain: 'news.example.com' })).toEqual(['backup', 'relay']);
    // the service's own mail has no project: a rule naming one never fits it
    expect(chooseRoute(routes, { ...message, projectId: null, fromDomain: 'news.example.com' })).toEqual([
      'backup',
      'relay',
    ]);
  });

  it('lists the first route of every rule a whole campaign may meet, whatever its recipients', () => {
    const { recipientDomain: _, ...campaign } = message;
    // the recipient-domain rule may fit some recipients; the catch-all fits the rest
    expect(possibleRoutes(routes, campaign)).toEqual(['backup']);
    expect(
      possibleRoutes(routes, { ...campaign, projectId: PROJECT, fromDomain: 'news.example.com' }),
    ).toEqual(['backup', 'dev']);
    // transactional mail meets its own rule first, whoever the recipients are
    expect(possibleRoutes(routes, { ...campaign, stream: 'transactional' })).toEqual(['relay']);
  });

  it('answers no route when no rule fits (a file parseRoutes refuses)', () => {
    expect(chooseRoute({ rules: [{ match: { stream: 'automation' }, routes: ['dev'] }] }, message)).toEqual(
      [],
    );
  });
});

describe('POSTHORN_ROUTES in loadConfig', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-routes-'));
  const base = { POSTHORN_DATA_DIR: dir, POSTHORN_SECRET: 'x'.repeat(32) };
  const write = (name: string, text: string) => {
    const file = path.join(dir, name);
    writeFileSync(file, text);
    return file;
  };

  it('is one route named default without a file: the relay, else the dev mailbox', () => {
    expect(
      loadConfig({ ...base, POSTHORN_SMTP_RELAY: 'smtp://127.0.0.1:2525', POSTHORN_SMTP_RELAY_TIMEOUT: '7' })
        .routes,
    ).toEqual(defaultRoutes('smtp://127.0.0.1:2525', 7));
    expect(loadConfig(base).routes).toEqual({
      routes: new Map([['default', { type: 'mailbox' }]]),
      rules: [{ match: {}, routes: ['default'] }],
    });
  });

  it('loads a good file, and stops on a bad one with its problems', () => {
    expect(
      loadConfig({ ...base, POSTHORN_ROUTES: write('good.json', JSON.stringify(example())) }).routes,
    ).toEqual(parseRoutes(example()));
    const bad = example() as any;
    bad.rules[1].routes = ['x'];
    const file = write('bad.json', JSON.stringify(bad));
    expect(() => loadConfig({ ...base, POSTHORN_ROUTES: file })).toThrow(
      new ConfigError(`POSTHORN_ROUTES: ${file} has 1 problem(s):\n  rules[1].routes[0]: no route named "x"`),
    );
    expect(() => loadConfig({ ...base, POSTHORN_ROUTES: write('broken.json', '{') })).toThrow(
      /is not valid JSON/,
    );
    expect(() => loadConfig({ ...base, POSTHORN_ROUTES: path.join(dir, 'absent.json') })).toThrow(
      /POSTHORN_ROUTES: cannot read/,
    );
    expect(() =>
      loadConfig({ ...base, POSTHORN_ROUTES: file, POSTHORN_SMTP_RELAY: 'smtp://127.0.0.1:2525' }),
    ).toThrow(/POSTHORN_SMTP_RELAY and POSTHORN_ROUTES are both set/);
    rmSync(dir, { recursive: true, force: true });
  });
});
