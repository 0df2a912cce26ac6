import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let account: SignupResult;
let key: string;

type Props = Record<string, string | number | boolean>;
interface Person {
  id?: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  subscribed: boolean;
  properties: Props;
  lists: { id: string; subscribed: boolean }[];
  events: { name: string; daysAgo: number; value?: number; currency?: string; properties: Props }[];
}

const DAY = 86_400_000;
let lists: { news: string; beta: string };
let people: Person[] = [];

/** A small deterministic population: varied properties, list memberships and event histories. */
function population(): Person[] {
  let seed = 7;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
  const out: Person[] = [];
  for (let i = 0; i < 60; i++) {
    const properties: Props = {};
    if (rand() < 0.8) properties.plan = pick(['free', 'pro', 'team']);
    if (rand() < 0.6) properties.seats = Math.floor(rand() * 10);
    if (rand() < 0.5) properties.trial = rand() < 0.5;
    if (rand() < 0.6) properties.signed_up = `2026-0${1 + Math.floor(rand() * 9)}-1${Math.floor(rand() * 9)}`;
    if (rand() < 0.1) properties.seats_text = `${Math.floor(rand() * 10)}`;
    const events: Person['events'] = [];
    const n = Math.floor(rand() * 6);
    for (let e = 0; e < n; e++) {
      const name = pick(['purchase', 'purchase', 'login', 'page_view']);
      const currency = pick(['EUR', 'EUR', 'USD']);
      events.push({
        name,
        daysAgo: Math.floor(rand() * 60),
        ...(name === 'purchase' ? { value: Math.round(rand() * 8000) / 100, currency } : {}),
        properties: name === 'purchase' ? { sku: pick(['A-1', 'B-2', 'C-3']) } : {},
      });
    }
    out.push({
      email: `${pick(['ann', 'bob', 'cy', 'al', 'dee'])}${i}@${pick(['acme.test', 'example.com', 'mail.test'])}`,
      first_name: rand() < 0.9 ? pick(['Ann', 'Bob', 'Alice', 'Carl', 'Dora']) : null,
      last_name: rand() < 0.7 ? pick(['Smith', 'Jones', 'Abbott']) : null,
      subscribed: rand() < 0.75,
      properties,
      lists: [],
      events,
    });
  }
  return out;
}

beforeAll(async () => {
  server = await startTestServer({}, ['api']);
  account = await server.signup();
  key = account.project_key.key;
  const news = await server.call('POST', '/v1/lists', { key, body: { name: 'News' } });
  const beta = await server.call('POST', '/v1/lists', { key, body: { name: 'Beta' } });
  lists = { news: news.body.id, beta: beta.body.id };
  people = population();
  for (const [i, p] of people.entries()) {
    const res = await server.call('POST', '/v1/contacts', {
      key,
      body: {
        email: p.email,
        first_name: p.first_name,
        last_name: p.last_name,
        subscribed: p.subscribed,
        properties: p.properties,
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    p.id = res.body.id;
    if (i % 2 === 0) p.lists.push({ id: lists.news, subscribed: i % 6 !== 0 });
    if (i % 3 === 0) p.lists.push({ id: lists.beta, subscribed: true });
  }
  for (const list of [lists.news, lists.beta]) {
    const members = people.filter((p) => p.lists.some((l) => l.id === list));
    await server.call('POST', `/v1/lists/${list}/contacts`, {
      key,
      body: { emails: members.map((m) => m.email) },
    });
    const left = members.filter((p) => p.lists.some((l) => l.id === list && !l.subscribed));
    if (left.length > 0)
      await server.call('POST', `/v1/lists/${list}/unsubscribe`, {
        key,
        body: { emails: left.map((m) => m.email) },
      });
  }
  // events with timestamps in the past: written directly (the API stamps events with the time of the call)
  const rows = people.flatMap((p) =>
    p.events.map((e) => [
      account.project.id,
      p.id,
      e.name,
      JSON.stringify(e.properties),
      e.value ?? null,
      e.currency ?? null,
      new Date(Date.now() - e.daysAgo * DAY - 3_600_000),
    ]),
  );
  for (const r of rows) {
    await server.runtime.ctx.pool.query(
      'insert into events (project_id, contact_id, name, properties, value, currency, created_at) values ($1, $2, $3, $4, $5, $6, $7)',
      r,
    );
  }
}, 60_000);
afterAll(() => server?.close());

// ---- the expected members, computed here in plain TypeScript over the same data ----
type Cond = Record<string, any>;
const jsonEq = (a: unknown, b: unknown) => a !== undefined && JSON.stringify(a) === JSON.stringify(b);
const asText = (v: unknown) => (v === undefined || v === null ? null : String(v));
const asDate = (v: unknown) => {
  if (typeof v !== 'string') return null;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : t;
};

function fieldMatches(p: Person, c: Cond): boolean {
  const isProp = c.field.startsWith('properties.');
  const raw: unknown = isProp
    ? p.properties[c.field.slice(11)]
    : (p as unknown as Record<string, unknown>)[c.field];
  const text = asText(raw);
  const v = c.value;
  switch (c.op) {
    case 'equals':
      return isProp ? jsonEq(raw, v) : raw === v;
    case 'not_equals':
      return !(isProp ? jsonEq(raw, v) : raw === v);
    case 'contains':
      return text?.toLowerCase().includes(String(v).toLowerCase()) === true;
    case 'not_contains':
      return !text?.toLowerCase().includes(String(v).toLowerCase());
    case 'starts_with':
      return text?.toLowerCase().startsWith(String(v).toLowerCase()) === true;
    case 'exists':
      return raw !== undefined && raw !== null && raw !== '';
    case 'not_exists':
      return !(raw !== undefined && raw !== null && raw !== '');
    case 'gt':
      return typeof raw === 'number' && raw > v;
    case 'gte':
      return typeof raw === 'number' && raw >= v;
    case 'lt':
      return typeof raw === 'number' && raw < v;
    case 'lte':
      return typeof raw === 'number' && raw <= v;
    case 'before':
      return asDate(raw) !== null && (asDate(raw) as number) < Date.parse(v);
    case 'after':
      return asDate(raw) !== null && (asDate(raw) as number) > Date.parse(v);
    case 'in':
      return (v as unknown[]).some((x) => jsonEq(raw, x));
    case 'not_in':
      return !(v as unknown[]).some((x) => jsonEq(raw, x));
  }
  throw new Error(`no evaluator for ${c.op}`);
}

function matches(p: Person, c: Cond): boolean {
  if ('all' in c) return c.all.every((x: Cond) => matches(p, x));
  if ('any' in c) return c.any.some((x: Cond) => matches(p, x));
  if ('field' in c) return fieldMatches(p, c);
  if ('list' in c) {
    const member = p.lists.some((l) => l.id === c.list && l.subscribed);
    return c.op === 'member' ? member : !member;
  }
  const inWindow = (e: Person['events'][number]) => c.within_days === undefined || e.daysAgo < c.within_days;
  if ('revenue' in c) {
    const evs = p.events.filter(
      (e) =>
        e.value !== undefined &&
        inWindow(e) &&
        (!c.currency || e.currency === c.currency) &&
        (!c.event || e.name === c.event),
    );
    const sum = evs.reduce((s, e) => s + (e.value as number), 0);
    if ((c.revenue.gte ?? 0) <= 0)
      return c.revenue.lte === undefined || evs.length === 0 || sum <= c.revenue.lte;
    return evs.length > 0 && sum >= c.revenue.gte && (c.revenue.lte === undefined || sum <= c.revenue.lte);
  }
  const count = p.events.filter(
    (e) =>
      e.name === c.event &&
      inWindow(e) &&
      (c.where ?? []).every((w: Cond) =>
        fieldMatches({ ...p, properties: e.properties }, { ...w, field: `properties.${w.property}` }),
      ),
  ).length;
  const gte = c.count?.gte ?? (c.count?.lte !== undefined ? 0 : 1);
  return count >= gte && (c.count?.lte === undefined || count <= c.count.lte);
}

const definitions = (): Record<string, Cond> => ({
  'plan is pro': { all: [{ field: 'properties.plan', op: 'equals', value: 'pro' }] },
  'seats >= 5 and subscribed': {
    all: [
      { field: 'properties.seats', op: 'gte', value: 5 },
      { field: 'subscribed', op: 'equals', value: true },
    ],
  },
  'email at acme or first name starts with A': {
    any: [
      { field: 'email', op: 'contains', value: '@ACME.' },
      { field: 'first_name', op: 'starts_with', value: 'a' },
    ],
  },
  'in News, not in Beta': {
    all: [
      { list: lists.news, op: 'member' },
      { list: lists.beta, op: 'not_member' },
    ],
  },
  'purchased at least twice in 30 days': { all: [{ event: 'purchase', count: { gte: 2 }, within_days: 30 }] },
  'never logged in': { all: [{ event: 'login', count: { lte: 0 } }] },
  'bought A-1': { all: [{ event: 'purchase', where: [{ property: 'sku', op: 'equals', value: 'A-1' }] }] },
  'EUR revenue >= 100': { all: [{ revenue: { gte: 100 }, currency: 'EUR' }] },
  'signed up before June': { all: [{ field: 'properties.signed_up', op: 'before', value: '2026-06-01' }] },
  'nested: (pro or team and 1-3 purchases) or no last name': {
    any: [
      {
        all: [
          { field: 'properties.plan', op: 'in', value: ['pro', 'team'] },
          { event: 'purchase', count: { gte: 1, lte: 3 } },
        ],
      },
      { field: 'last_name', op: 'not_exists' },
    ],
  },
  'on trial with seats set': {
    all: [
      { field: 'properties.trial', op: 'equals', value: true },
      { field: 'properties.seats', op: 'exists' },
    ],
  },
  'revenue at most 50 (including none)': { all: [{ revenue: { lte: 50 } }] },
  'plan is not free (or unset)': { all: [{ field: 'properties.plan', op: 'not_equals', value: 'free' }] },
  'seats text "5" is not the number 5': { all: [{ field: 'properties.seats', op: 'in', value: ['5', 5] }] },
  'EUR revenue >= 100, or in News (counted from the facts alone)': {
    any: [
      { revenue: { gte: 100 }, currency: 'EUR' },
      { list: lists.news, op: 'member' },
    ],
  },
  'in News, and in Beta or a buyer (intersection and union of facts)': {
    all: [
      { list: lists.news, op: 'member' },
      {
        any: [
          { list: lists.beta, op: 'member' },
          { event: 'purchase', count: { gte: 1 } },
        ],
      },
    ],
  },
  'unsubscribed, or page views in the last 14 days': {
    any: [
      { field: 'subscribed', op: 'not_equals', value: true },
      { event: 'page_view', within_days: 14 },
    ],
  },
});

describe('segments: members computed by the database equal members computed independently', () => {
  it('holds for seventeen definitions', async () => {
    let nonEmpty = 0;
    for (const [name, definition] of Object.entries(definitions())) {
      const created = await server.call('POST', '/v1/segments', { key, body: { name, definition } });
      expect(created.status, `${name}: ${JSON.stringify(created.body)}`).toBe(200);
      const expected = people
        .filter((p) => matches(p, definition))
        .map((p) => p.email)
        .sort();
      const got: string[] = [];
      for (let offset = 0; ; offset += 100) {
        const page = await server.call(
          'GET',
          `/v1/segments/${created.body.id}/contacts?limit=100&offset=${offset}`,
          { key },
        );
        expect(page.status).toBe(200);
        got.push(...page.body.data.map((c: { email: string }) => c.email));
        if (page.body.data.length < 100) break;
      }
      expect(got.sort(), name).toEqual(expected);
      const count = await server.call('GET', `/v1/segments/${created.body.id}/count`, { key });
      expect(count.body.count, name).toBe(expected.length);
      if (expected.length > 0 && expected.length < people.length) nonEmpty++;
    }
    // the population is varied enough that most definitions split it
    expect(nonEmpty).toBeGreaterThanOrEqual(12);
  });

  it('membership is live: a change to a contact changes the segment on the next read', async () => {
    const seg = await server.call('POST', '/v1/segments', {
      key,
      body: { name: 'vip', definition: { all: [{ field: 'properties.vip', op: 'equals', value: true }] } },
    });
    expect((await server.call('GET', `/v1/segments/${seg.body.id}/count`, { key })).body.count).toBe(0);
    await server.call('PATCH', `/v1/contacts/${people[0].id}`, { key, body: { properties: { vip: true } } });
    expect((await server.call('GET', `/v1/segments/${seg.body.id}/count`, { key })).body.count).toBe(1);
    const listed = await server.call('GET', '/v1/segments', { key });
    expect(listed.body.data.find((s: { id: string }) => s.id === seg.body.id).definition).toEqual({
      all: [{ field: 'properties.vip', op: 'equals', value: true }],
    });
    const members = await server.call('GET', `/v1/contacts?segment=${seg.body.id}`, { key });
    expect(members.body.data.map((c: { id: string }) => c.id)).toEqual([people[0].id]);
  });

  it('revenue sums are exact to 4 decimals: 0.7 + 0.1 reaches 0.8 (binary floating point gives 0.7999…)', async () => {
    const body = (value: number) => ({ email: 'cents@example.com', event: 'tip', value, currency: 'GBP' });
    await server.call('POST', '/v1/events', { key, body: body(0.7) });
    await server.call('POST', '/v1/events', { key, body: body(0.1) });
    const count = async (revenue: Record<string, number>) => {
      const seg = await server.call('POST', '/v1/segments', {
        key,
        body: {
          name: `tips ${JSON.stringify(revenue)}`,
          definition: { all: [{ revenue, currency: 'GBP' }] },
        },
      });
      return (await server.call('GET', `/v1/segments/${seg.body.id}/count`, { key })).body.count;
    };
    expect(await count({ gte: 0.8 })).toBe(1);
    expect(await count({ gte: 0.8001 })).toBe(0);
    // thresholds between two steps of 0.0001 are rounded outward, never onto the wrong side
    expect(await count({ gte: 0.79995 })).toBe(1);
    expect(await count({ gte: 0.80005 })).toBe(0);
    expect(await count({ gte: 0.7, lte: 0.80005 })).toBe(1);
    expect(await count({ gte: 0.7, lte: 0.79995 })).toBe(0);
    expect(await count({ lte: 0.8 })).toBe(people.length + 1); // everyone: the others have no GBP revenue
    expect(await count({ lte: 0.7999 })).toBe(people.length);
    // a threshold whose product with 10,000 is not whole in floating point (1.1 * 10000 = 11000.000000000002)
    await server.call('POST', '/v1/events', { key, body: body(0.3) });
    expect(await count({ gte: 1.1 })).toBe(1);
    expect(await count({ gte: 0.7, lte: 1.1 })).toBe(1);
  });
});

describe('segment definitions are checked', () => {
  const bad: [string, unknown, RegExp][] = [
    [
      'unknown operator',
      { all: [{ field: 'email', op: 'sounds_like', value: 'x' }] },
      /unknown operator "sounds_like"/,
    ],
    ['unknown field', { all: [{ field: 'age', op: 'equals', value: 3 }] }, /unknown field "age"/],
    ['no group', { field: 'email', op: 'exists' }, /exactly one key, "all" or "any"/],
    ['empty group', { all: [] }, /non-empty array/],
    [
      'gte needs a number',
      { all: [{ field: 'properties.seats', op: 'gte', value: 'five' }] },
      /needs a number/,
    ],
    ['a list that is not a list id', { all: [{ list: 'news', op: 'member' }] }, /must be a list id/],
    [
      'a bad count',
      { all: [{ event: 'purchase', count: { gte: -1 } }] },
      /gte and lte must be whole numbers/,
    ],
    ['a bad window', { all: [{ event: 'purchase', within_days: 0 }] }, /within_days/],
    ['neither kind', { all: [{ something: 1 }] }, /must be a field, list, topic, event or revenue condition/],
  ];
  for (const [name, definition, message] of bad) {
    it(`refuses ${name} with 400`, async () => {
      expectError(
        await server.call('POST', '/v1/segments', { key, body: { name, definition } }),
        400,
        message,
      );
    });
  }

  it('refuses a segment on a list that does not exist (or is another project’s) with 400', async () => {
    const other = await server.signup();
    const theirs = await server.call('POST', '/v1/lists', {
      key: other.project_key.key,
      body: { name: 'Theirs' },
    });
    for (const list of ['00000000-0000-4000-8000-000000000000', theirs.body.id]) {
      expectError(
        await server.call('POST', '/v1/segments', {
          key,
          body: { name: `on ${list}`, definition: { all: [{ list, op: 'member' }] } },
        }),
        400,
        /does not exist in this project/,
      );
    }
  });

  it('names are unique, updates are checked, and another project’s segment is 404', async () => {
    const def = { all: [{ field: 'subscribed', op: 'equals', value: true }] };
    const seg = await server.call('POST', '/v1/segments', {
      key,
      body: { name: 'Subscribed', definition: def },
    });
    expectError(
      await server.call('POST', '/v1/segments', { key, body: { name: 'Subscribed', definition: def } }),
      409,
    );
    expectError(
      await server.call('PATCH', `/v1/segments/${seg.body.id}`, {
        key,
        body: { definition: { any: [{ field: 'x' }] } },
      }),
      400,
    );
    const renamed = await server.call('PATCH', `/v1/segments/${seg.body.id}`, {
      key,
      body: { name: 'Opted in' },
    });
    expect(renamed.body.name).toBe('Opted in');
    const other = await server.signup();
    expectError(await server.call('GET', `/v1/segments/${seg.body.id}`, { key: other.project_key.key }), 404);
    expectError(
      await server.call('GET', `/v1/segments/${seg.body.id}/contacts`, { key: other.project_key.key }),
      404,
    );
    expect((await server.call('DELETE', `/v1/segments/${seg.body.id}`, { key })).status).toBe(204);
  });
});
