/**
 * Checks HTTP responses against Resend's own OpenAPI 3.1 description
 * (test/fixtures/resend/resend-openapi.json), so the Resend-compatible door's responses are held to
 * what Resend documents rather than to what we believe it returns (issue 35). The whole document is
 * added to Ajv (JSON Schema 2020-12) under the id `resend`; each response schema is compiled by a
 * JSON pointer into it, so its `#/components/...` refs resolve. OpenAPI's `nullable: true` is read
 * as allowing null; `example` and other OpenAPI keywords are ignored.
 */
import { readFileSync } from 'node:fs';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

export interface ResendOperation {
  method: string;
  template: string;
  operationId: string;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const DOCUMENT_ID = 'resend';

const document = JSON.parse(
  readFileSync(new URL('../fixtures/resend/resend-openapi.json', import.meta.url), 'utf8'),
) as { paths: Record<string, Record<string, any>> };

/** Rewrites `nullable: true` (OpenAPI 3.0 style, still in Resend's file) into JSON Schema. */
function allowNulls(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) allowNulls(item);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const schema = node as Record<string, any>;
  if (schema.nullable === true) {
    delete schema.nullable;
    if (typeof schema.type === 'string') schema.type = [schema.type, 'null'];
    if (Array.isArray(schema.enum) && !schema.enum.includes(null)) schema.enum = [...schema.enum, null];
  }
  for (const [key, value] of Object.entries(schema))
    if (key !== 'example' && key !== 'examples') allowNulls(value);
}

allowNulls(document);

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
ajv.addFormat('binary', true);
ajv.addSchema({ ...document, $id: DOCUMENT_ID });

const operations: ResendOperation[] = Object.entries(document.paths).flatMap(([template, item]) =>
  METHODS.filter((method) => item[method]).map((method) => ({
    method: method.toUpperCase(),
    template,
    operationId: item[method].operationId as string,
  })),
);

/** Resend's whole description (nullable rewritten), for generating requests from its schemas. */
export function resendDocument(): Record<string, any> {
  return document;
}

/** Every operation in Resend's description. */
export function resendOperations(): ResendOperation[] {
  return operations.map((operation) => ({ ...operation }));
}

const segments = (path: string) => path.split('?')[0].replace(/\/+$/, '').split('/');
const isParameter = (segment: string) => segment.startsWith('{') && segment.endsWith('}');

/**
 * The operation a concrete request (`/emails/4ef9…`, query string allowed) is for: the template of
 * the same length whose segments all match, a literal segment winning over a parameter, leftmost first.
 */
export function operationFor(method: string, path: string): ResendOperation | null {
  const wanted = segments(path);
  let best: { operation: ResendOperation; rank: string } | null = null;
  for (const operation of operations) {
    if (operation.method !== method.toUpperCase()) continue;
    const parts = segments(operation.template);
    if (parts.length !== wanted.length) continue;
    if (!parts.every((part, i) => part === wanted[i] || isParameter(part))) continue;
    // '0' for a literal, '1' for a parameter: the smallest string prefers literals, leftmost first
    const rank = parts.map((part) => (isParameter(part) ? '1' : '0')).join('');
    if (!best || rank < best.rank) best = { operation, rank };
  }
  return best ? { ...best.operation } : null;
}

const pointerSegment = (segment: string) =>
  encodeURIComponent(segment.replace(/~/g, '~0').replace(/\//g, '~1'));
const validators = new Map<string, ValidateFunction | null>();

/** The compiled JSON schema of an operation's response with this status, or null when none is given. */
function validatorFor(operation: ResendOperation, status: number): ValidateFunction | null {
  const key = `${operation.method} ${operation.template} ${status}`;
  if (validators.has(key)) return validators.get(key)!;
  const method = operation.method.toLowerCase();
  const response = document.paths[operation.template][method].responses?.[String(status)];
  let validate: ValidateFunction | null = null;
  if (response?.content?.['application/json']?.schema) {
    const pointer = ['paths', operation.template, method, 'responses', String(status), 'content']
      .concat('application/json', 'schema')
      .map(pointerSegment)
      .join('/');
    validate = ajv.compile({ $ref: `${DOCUMENT_ID}#/${pointer}` });
  }
  validators.set(key, validate);
  return validate;
}

function formatError(error: ErrorObject): string {
  const params = error.params as Record<string, any>;
  let detail = '';
  if (error.keyword === 'enum') detail = ` (${JSON.stringify(params.allowedValues)})`;
  if (error.keyword === 'additionalProperties') detail = ` (${params.additionalProperty})`;
  return `${error.instancePath || '/'} ${error.message}${detail}`;
}

/**
 * Checks a response body against Resend's schema for the operation and status: Ajv's errors as
 * `instancePath message`, none when it fits or when Resend gives no JSON schema for that status.
 */
export function validateResponse(
  method: string,
  path: string,
  status: number,
  body: unknown,
): { operationId: string | null; errors: string[] } {
  const operation = operationFor(method, path);
  if (!operation) {
    return {
      operationId: null,
      errors: [`no operation in Resend's OpenAPI for ${method.toUpperCase()} ${path}`],
    };
  }
  const documented = Object.keys(
    document.paths[operation.template][operation.method.toLowerCase()].responses ?? {},
  );
  // Resend describes no error answers; a success must carry a status it documents
  if (status < 400 && !documented.includes(String(status)))
    return {
      operationId: operation.operationId,
      errors: [`answered ${status}; Resend documents ${documented.join(', ')} for ${operation.operationId}`],
    };
  const validate = validatorFor(operation, status);
  if (!validate || validate(body)) return { operationId: operation.operationId, errors: [] };
  return { operationId: operation.operationId, errors: (validate.errors ?? []).map(formatError) };
}
