import http from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ValidationError } from '../domain/core/errors.ts';
import { isResendPath, resendError } from './resend/errors.ts';

/** Deeper JSON than this is refused: no request of this API needs it, and walking it costs stack. */
const MAX_DEPTH = 64;

/**
 * The first problem with the strings of a request part (a NUL, which PostgreSQL text cannot hold; an
 * unpaired UTF-16 surrogate, which is not Unicode and which jsonb refuses; nesting past MAX_DEPTH),
 * with the path of the field, or null. Iterative, so hostile nesting cannot exhaust the stack.
 */
export function badStringIn(root: unknown): { path: string; problem: string } | null {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: root, path: '', depth: 0 }];
  const check = (text: string, path: string) => {
    if (text.includes('\u0000'))
      return { path, problem: 'contains a NUL character (\\u0000), which cannot be stored' };
    if (!text.isWellFormed())
      return { path, problem: 'contains an unpaired UTF-16 surrogate, which is not valid Unicode' };
    return null;
  };
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop() as (typeof stack)[number];
    if (typeof value === 'string') {
      const found = check(value, path);
      if (found) return found;
      continue;
    }
    // a raw upload (a CSV import, read as a stream) is checked where it is read, row by row
    if (!value || typeof value !== 'object' || Buffer.isBuffer(value) || value instanceof Readable) continue;
    if (depth >= MAX_DEPTH) return { path, problem: `is nested more than ${MAX_DEPTH} levels deep` };
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--)
        stack.push({ value: value[i], path: `${path}[${i}]`, depth: depth + 1 });
      continue;
    }
    for (const [k, v] of Object.entries(value).reverse()) {
      const field = path ? `${path}.${k}` : k;
      const found = check(k, field);
      if (found) return found;
      stack.push({ value: v, path: field, depth: depth + 1 });
    }
  }
  return null;
}

/** A request target shortened for an error message: never echo a hostile path whole. */
export function shortPath(url: string): string {
  const path = url.split('?')[0];
  return path.length > 80 ? `${path.slice(0, 80)}...` : path;
}

/** The router's own refusals (a bad percent-encoding, an over-long path parameter) in the API's error shape. */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
  const status = tooLong ? 414 : 400;
  const message = tooLong
    ? `A path parameter of ${request.method} ${shortPath(request.url)} is too long`
    : 'Malformed request path: it is not valid percent-encoded UTF-8';
  // the Resend door's paths get its error shape here too: the router refuses before the door's hooks
  reply
    .code(status)
    .send(isResendPath(request.url) ? resendError(status, request, message) : { error: message });
}

const CLIENT_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request headers are too large'],
  HPE_URI_TOO_LONG: [414, 'The request line is too long'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request took too long to arrive'],
};

/** What the HTTP parser refuses before Fastify sees a request (oversized headers, garbage), as `{error}`. */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket) {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, error] = CLIENT_ERRORS[err.code ?? ''] ?? [400, 'Malformed HTTP request'];
  const body = JSON.stringify({ error });
  if (socket.writable)
    socket.write(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`,
    );
  socket.destroy(err);
}

/**
 * Many clients send Content-Type: application/json with no body on POST/DELETE (the Resend SDK does
 * for cancel and delete): that is an empty body, not malformed JSON.
 */
export function acceptEmptyJsonBodies(app: FastifyInstance) {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if ((body as string).trim() === '') return done(null, undefined);
    return parseJson(request, body as string, done);
  });
}

/**
 * HTML forms (the browser pages: /pair, /u/{token}) post application/x-www-form-urlencoded: each
 * page's plugin calls this, so the JSON API itself keeps answering 415 to form bodies.
 */
export function acceptFormBodies(app: FastifyInstance) {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) =>
    done(null, Object.fromEntries(new URLSearchParams(body as string))),
  );
}

/** Strings PostgreSQL cannot store, and hostile nesting: refused before validation, naming the field. */
export function refuseUnstorableStrings(app: FastifyInstance) {
  app.addHook('preValidation', async (request) => {
    for (const [part, value] of [
      ['Field', request.body],
      ['Query parameter', request.query],
      ['Path parameter', request.params],
    ] as const) {
      const found = badStringIn(value);
      if (found)
        throw new ValidationError(
          `${found.path ? `${part} \`${found.path}\`` : 'The request body'} ${found.problem}`,
        );
    }
  });
}
