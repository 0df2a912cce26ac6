import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

// Bodies are never coerced ("true" is not true); query strings and params are text, so they are.
const strictAjv = addFormats(
  new Ajv({ strict: false, allErrors: false, coerceTypes: false, useDefaults: true }),
);
const coercingAjv = addFormats(
  new Ajv({ strict: false, allErrors: false, coerceTypes: true, useDefaults: true }),
);

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? strictAjv : coercingAjv).compile(schema as object);

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'a boolean (true or false)',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

/** One clear sentence naming the field and the rule broken, from Ajv's first error. */
export function describeValidationError(errors: ErrorObject[], part: string | undefined): string {
  const last = errors[errors.length - 1];
  if (last.keyword === 'anyOf' || last.keyword === 'oneOf') {
    // a union whose value took a branch's shape and failed inside it: name the inner field
    const deeper = errors.filter(
      (x) =>
        x !== last &&
        x.instancePath.length > last.instancePath.length &&
        x.instancePath.startsWith(last.instancePath),
    );
    if (deeper.length > 0) {
      deeper.sort((a, b) => b.instancePath.length - a.instancePath.length);
      return describeValidationError([deeper[0]], part);
    }
    // a union: say which shapes are accepted instead of the first branch's complaint
    const here = errors.filter((x) => x.instancePath === last.instancePath && x !== last);
    const other = here.find((x) => x.keyword !== 'type');
    if (other) return describeValidationError([other], part);
    const types = here.map((x) => String(x.params.type));
    if (types.length > 0) {
      return describeValidationError([{ ...last, keyword: 'type', params: { type: types.join(',') } }], part);
    }
  }
  const e = errors[0];
  const where =
    part === 'querystring'
      ? 'query parameter'
      : part === 'params'
        ? 'path parameter'
        : part === 'headers'
          ? 'header'
          : 'field';
  // /3/to/0 -> [3].to[0]
  const path = e.instancePath
    .split('/')
    .slice(1)
    .map((seg) => (/^\d+$/.test(seg) ? `[${seg}]` : `.${seg}`))
    .join('')
    .replace(/^\./, '');
  const name = (p: string) => `\`${p}\``;
  if (e.keyword === 'required') {
    const missing = String(e.params.missingProperty);
    return `${where === 'field' ? 'Field' : where[0].toUpperCase() + where.slice(1)} ${name(path ? `${path}.${missing}` : missing)} is required`;
  }
  if (!path) {
    if (part === 'body' && e.keyword === 'type') return 'The request body must be a JSON object';
    return `The ${part ?? 'request'} is invalid: ${e.message}`;
  }
  const subject = `${where === 'field' ? 'Field' : where[0].toUpperCase() + where.slice(1)} ${name(path)}`;
  switch (e.keyword) {
    case 'type': {
      const types = String(e.params.type).split(',');
      return `${subject} must be ${types.map((t) => TYPE_NAMES[t] ?? t).join(' or ')}`;
    }
    case 'const':
      return `${subject} must be ${JSON.stringify(e.params.allowedValue)}`;
    case 'enum':
      return `${subject} must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'minimum':
    case 'exclusiveMinimum':
      return `${subject} must be ${e.keyword === 'minimum' ? 'at least' : 'more than'} ${e.params.limit}`;
    case 'maximum':
    case 'exclusiveMaximum':
      return `${subject} must be ${e.keyword === 'maximum' ? 'at most' : 'less than'} ${e.params.limit}`;
    case 'minLength':
      return e.params.limit === 1
        ? `${subject} must not be empty`
        : `${subject} must be at least ${e.params.limit} characters`;
    case 'maxLength':
      return `${subject} must be at most ${e.params.limit} characters`;
    case 'minItems':
      return `${subject} must have at least ${e.params.limit} item(s)`;
    case 'maxItems':
      return `${subject} must have at most ${e.params.limit} items`;
    case 'format':
      return `${subject} must be a valid ${e.params.format}`;
    case 'pattern':
      return `${subject} has an invalid format`;
    default:
      return `${subject} ${e.message}`;
  }
}
