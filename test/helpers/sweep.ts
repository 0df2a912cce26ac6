import { randomUUID } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';

/**
 * Generated sweeps of malformed requests over every operation of an OpenAPI document (Posthorn's
 * /v1 and Resend's description for the /resend door): one hostile field, path parameter or query
 * parameter at a time, beside a plausible value for each of the others. The tests decide what a
 * right answer is (test/http/bad-input-sweep.test.ts, resend-bad-input-sweep.test.ts).
 */

export type Json = Record<string, any>;
export interface Operation {
  method: string;
  path: string;
  op: Json;
}
export interface Probe {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  why: string;
}
export interface Answer {
  status: number;
  text: string;
}

const HOSTILE_STRINGS: [string, string][] = [
  ['\ud800', 'a lone high surrogate'],
  ['x\udfffy', 'a lone low surrogate'],
  ['a\u0000b', 'a NUL'],
  ['x'.repeat(70_000), 'a 70,000-character string'],
  ['-271821-04-20T00:00:00Z', 'the earliest JavaScript date'],
  ['+275760-09-13T00:00:00Z', 'the latest JavaScript date'],
  ['0000-00-00', 'a date of zeros'],
];
// raw JSON text, so numbers JavaScript cannot hold reach the parser as sent
const HOSTILE_JSON: [string, string][] = [
  ['9223372036854775808', '2^63'],
  ['-9223372036854775809', '-2^63 - 1'],
  ['1e400', '1e400'],
  ['-1e400', '-1e400'],
  ['1.5', 'a fraction'],
  ['-1', 'minus one'],
  ['null', 'null'],
  ['true', 'a boolean'],
  ['{}', 'an empty object'],
  ['[]', 'an empty array'],
  [`${'['.repeat(5000)}${']'.repeat(5000)}`, 'arrays nested 5,000 deep'],
  [`${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}`, 'objects nested 3,000 deep'],
  [
    `${'{"and":['.repeat(2000)}{"field":"email","op":"eq","value":"x"}${']}'.repeat(2000)}`,
    'a condition nested 2,000 deep',
  ],
];
const HOSTILE_QUERY: [string, string][] = [
  ['9223372036854775808', '2^63'],
  ['99999999999999999999999999', 'a 26-digit integer'],
  ['1e400', '1e400'],
  ['-1', 'minus one'],
  ['NaN', 'NaN'],
  ['%ED%A0%80', 'a surrogate encoded as UTF-8'],
  ['%E0%A4%A', 'bad percent-encoding'],
  ['%00', 'a NUL'],
  ['-271821-04-20T00:00:00Z', 'the earliest JavaScript date'],
  ['%2B275760-09-13T00:00:00Z', 'the latest JavaScript date'],
  ['x'.repeat(4000), 'a 4,000-character value'],
];
const HOSTILE_PATH: [string, string][] = [
  ['x'.repeat(5000), 'a 5,000-character segment'],
  ['%E0%A4%A', 'bad percent-encoding'],
  ['%ED%A0%80', 'a surrogate encoded as UTF-8'],
  ['%00', 'a NUL'],
  ['..%2F..%2Fetc', 'an encoded traversal'],
  ['9223372036854775808', '2^63'],
];

export function resolve(doc: Json, schema: Json | undefined): Json {
  let s = schema ?? {};
  for (let i = 0; i < 20 && typeof s.$ref === 'string'; i++) {
    s = s.$ref
      .split('/')
      .slice(1)
      .reduce((node: Json, part: string) => node[part], doc);
  }
  return s;
}

/** A plausible value for a schema, so that one hostile field at a time gets past the others. */
function sample(doc: Json, schema: Json | undefined, name: string, depth = 0): unknown {
  const s = resolve(doc, schema);
  if (depth > 6) return null;
  const union = s.anyOf ?? s.oneOf;
  if (union)
    return sample(doc, union.find((b: Json) => resolve(doc, b).type !== 'null') ?? union[0], name, depth);
  if (s.const !== undefined) return s.const;
  if (s.enum) return s.enum[0];
  if (s.default !== undefined) return s.default;
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
  switch (type) {
    case 'object': {
      const out: Json = {};
      for (const key of s.required ?? Object.keys(s.properties ?? {}).slice(0, 3))
        out[key] = sample(doc, s.properties?.[key], key, depth + 1);
      return out;
    }
    case 'array':
      return [sample(doc, s.items, name, depth + 1)];
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return true;
    case 'string':
      if (s.format === 'date-time' || name.endsWith('_at'))
        return new Date(Date.now() + 3_600_000).toISOString();
      if (s.format === 'uuid' || name.endsWith('_id') || name === 'id') return randomUUID();
      if (s.format === 'email' || /email|^to$|^from$|reply_to/.test(name)) return 'sweep@example.com';
      if (s.format === 'uri' || name === 'url') return 'https://example.com/hook';
      if (name === 'domain') return 'sweep.example.com';
      return 'sweep';
    default:
      return 'sweep';
  }
}

/** Paths into an object (one and two levels), each a place to put a hostile value. */
function fieldPaths(value: unknown): string[][] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return [];
  const out: string[][] = [];
  for (const [k, v] of Object.entries(value as Json)) {
    out.push([k]);
    if (v && typeof v === 'object' && !Array.isArray(v)) for (const k2 of Object.keys(v)) out.push([k, k2]);
  }
  return out;
}

/** The JSON text of `base` with the value at `path` replaced by raw JSON text. */
function withRaw(base: Json, path: string[], raw: string): string {
  const marker = `__sweep_${randomUUID()}__`;
  const copy = structuredClone(base);
  let node = copy;
  for (const part of path.slice(0, -1)) node = node[part];
  node[path[path.length - 1]] = marker;
  return JSON.stringify(copy).replace(JSON.stringify(marker), raw);
}

export function probesFor(
  doc: Json,
  { method, path, op }: Operation,
  auth: Record<string, string>,
  prefix = '',
): Probe[] {
  const params: Json[] = (op.parameters ?? []).map((p: Json) => resolve(doc, p));
  const pathParams = params.filter((p) => p.in === 'path');
  const queryParams = params.filter((p) => p.in === 'query');
  const fill = (override?: [string, string]) =>
    prefix +
    path.replace(/\{([^}]+)\}/g, (_m, name: string) =>
      override && override[0] === name ? override[1] : name === 'position' ? '0' : randomUUID(),
    );
  const json = { 'content-type': 'application/json' };
  const probes: Probe[] = [];
  const add = (p: Omit<Probe, 'method'>) => probes.push({ method, ...p });

  const mediaTypes = Object.keys(op.requestBody?.content ?? {});
  const bodySchema = op.requestBody?.content?.['application/json']?.schema;
  const base = bodySchema ? sample(doc, bodySchema, 'body') : undefined;
  const baseText = base === undefined ? undefined : JSON.stringify(base);

  add({ path: fill(), headers: {}, why: 'no key' });
  add({ path: fill(), headers: { authorization: 'Bearer ph_not_a_real_key' }, why: 'a malformed key' });
  add({ path: fill(), headers: { ...auth, ...json }, why: 'a key and an empty JSON body' });
  if (baseText) add({ path: fill(), headers: { ...auth, ...json }, body: baseText, why: 'a plausible body' });
  if (mediaTypes.length > 0 || method !== 'get') {
    for (const [raw, why] of HOSTILE_JSON.slice(-4))
      add({ path: fill(), headers: { ...auth, ...json }, body: raw, why: `the whole body is ${why}` });
    add({ path: fill(), headers: { ...auth, ...json }, body: '{"a":', why: 'truncated JSON' });
    add({
      path: fill(),
      headers: { ...auth, ...json },
      body: JSON.stringify({ '\ud800': 1 }),
      why: 'a surrogate key',
    });
    add({
      path: fill(),
      headers: { ...auth, 'content-type': 'text/csv' },
      body: 'email\n\ud800@x.com',
      why: 'CSV',
    });
    add({ path: fill(), headers: { ...auth, 'content-type': 'application/xml' }, body: '<a/>', why: 'XML' });
  }
  if (base && typeof base === 'object' && !Array.isArray(base)) {
    for (const field of fieldPaths(base)) {
      for (const [value, why] of HOSTILE_STRINGS)
        add({
          path: fill(),
          headers: { ...auth, ...json },
          body: withRaw(base as Json, field, JSON.stringify(value)),
          why: `${field.join('.')} is ${why}`,
        });
      for (const [raw, why] of HOSTILE_JSON)
        add({
          path: fill(),
          headers: { ...auth, ...json },
          body: withRaw(base as Json, field, raw),
          why: `${field.join('.')} is ${why}`,
        });
    }
  } else if (Array.isArray(base) && base[0] && typeof base[0] === 'object') {
    for (const field of fieldPaths(base[0])) {
      for (const [raw, why] of [...HOSTILE_JSON, ['"\\ud800"', 'a lone surrogate']] as [string, string][])
        add({
          path: fill(),
          headers: { ...auth, ...json },
          body: `[${withRaw(base[0] as Json, field, raw)}]`,
          why: `[0].${field.join('.')} is ${why}`,
        });
    }
  }
  for (const p of pathParams)
    for (const [value, why] of HOSTILE_PATH)
      add({
        path: fill([p.name, value]),
        headers: { ...auth, ...json },
        body: baseText,
        why: `path ${p.name} is ${why}`,
      });
  for (const q of queryParams)
    for (const [value, why] of HOSTILE_QUERY)
      add({ path: `${fill()}?${q.name}=${value}`, headers: auth, why: `query ${q.name} is ${why}` });
  if (queryParams.length > 0)
    add({
      path: `${fill()}?${queryParams.map((q) => `${q.name}=%`).join('&')}`,
      headers: auth,
      why: 'lone % in every query parameter',
    });
  return probes;
}

export const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

export function send(base: URL, probe: Probe): Promise<Answer> {
  return new Promise((resolvePromise, reject) => {
    const req = http.request(
      {
        host: base.hostname,
        port: base.port,
        method: probe.method.toUpperCase(),
        path: probe.path,
        headers:
          probe.body === undefined
            ? probe.headers
            : { ...probe.headers, 'content-length': Buffer.byteLength(probe.body) },
        agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolvePromise({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(probe.body);
  });
}

/** Sends a raw HTTP request over a socket and reads the status line and body. */
export function rawRequest(port: number, text: string): Promise<Answer> {
  return new Promise((resolvePromise, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', (err) => (chunks.length > 0 ? undefined : reject(err)));
    socket.on('close', () => {
      const all = Buffer.concat(chunks).toString('utf8');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(all)?.[1] ?? 0);
      resolvePromise({ status, text: all.slice(all.indexOf('\r\n\r\n') + 4) });
    });
    socket.end(text);
  });
}

/** The operations of an OpenAPI document. */
export function operationsOf(doc: Json): Operation[] {
  return Object.entries(doc.paths as Json).flatMap(([path, ops]) =>
    Object.entries(ops as Json)
      .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
      .map(([method, op]) => ({ method, path, op: op as Json })),
  );
}

/**
 * Sends every probe, eight at a time; what `check` finds wrong in each answer, and how many
 * probes each operation (`method path`) got.
 */
export async function sweep(
  base: URL,
  queue: { o: Operation; p: Probe }[],
  check: (answer: Answer, o: Operation) => string | null,
): Promise<{ failures: string[]; swept: Map<string, number> }> {
  const failures: string[] = [];
  const swept = new Map<string, number>();
  let next = 0;
  const worker = async () => {
    while (next < queue.length) {
      const { o, p } = queue[next++];
      const id = `${o.method} ${o.path}`;
      const answer = await send(base, p);
      swept.set(id, (swept.get(id) ?? 0) + 1);
      if (process.env.SWEEP_DEBUG) console.log(answer.status, id, p.why, answer.text.slice(0, 120));
      const wrong = check(answer, o);
      if (wrong) failures.push(`${id} (${p.why}): ${wrong}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return { failures, swept };
}
