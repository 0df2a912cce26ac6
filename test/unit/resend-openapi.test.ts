import { describe, expect, it } from 'vitest';
import { operationFor, resendOperations, validateResponse } from '../helpers/resend-openapi.ts';

const EMAIL_ID = '4ef9a417-02e9-4d39-ad75-9611e0fcc33c';

describe("Resend's OpenAPI description as a test oracle", () => {
  it('lists every operation in the fixture', () => {
    const operations = resendOperations();
    expect(operations.length).toBeGreaterThanOrEqual(100);
    expect(operations).toContainEqual({ method: 'GET', template: '/domains', operationId: 'domains/list' });
  });

  it('matches concrete paths to templates, a literal segment winning over a parameter', () => {
    expect(operationFor('POST', '/emails/batch')?.operationId).toBe('emails/send-batch');
    expect(operationFor('GET', '/emails/abc')?.operationId).toBe('emails/get');
    expect(operationFor('get', `/emails/${EMAIL_ID}?x=1`)).toEqual({
      method: 'GET',
      template: '/emails/{email_id}',
      operationId: 'emails/get',
    });
    expect(operationFor('GET', '/emails/receiving')?.operationId).toBe('emails/list-receiving');
    expect(operationFor('GET', '/emails/receiving/abc')?.operationId).toBe('emails/get-receiving');
    expect(operationFor('POST', '/domains/x/verify')?.operationId).toBe('domains/verify');
    expect(operationFor('GET', '/nowhere')).toBeNull();
    expect(operationFor('PUT', '/emails')).toBeNull();
  });

  it('passes a body that fits the schema', () => {
    expect(validateResponse('GET', '/domains', 200, { object: 'list', has_more: false, data: [] })).toEqual({
      operationId: 'domains/list',
      errors: [],
    });
  });

  it('fails a body that does not, naming the field', () => {
    const wrongType = validateResponse('GET', '/domains', 200, { object: 'list', has_more: 'no', data: [] });
    expect(wrongType.operationId).toBe('domains/list');
    expect(wrongType.errors).toEqual(['/has_more must be boolean']);

    const domain = { object: 'domain', id: 'd1', name: 'example.com', status: 'active', records: [] };
    const wrongStatus = validateResponse('GET', '/domains/d1', 200, domain);
    expect(wrongStatus.errors).toHaveLength(1);
    expect(wrongStatus.errors[0]).toMatch(
      /^\/status must be equal to one of the allowed values.*not_started/,
    );
  });

  it("reads OpenAPI's nullable as allowing null", () => {
    const attachment = { object: 'attachment', id: EMAIL_ID, filename: null, content_disposition: null };
    expect(validateResponse('GET', `/emails/${EMAIL_ID}/attachments/a1`, 200, attachment).errors).toEqual([]);
    const wrong = { ...attachment, filename: 3, content_disposition: 'sideways' };
    expect(validateResponse('GET', `/emails/${EMAIL_ID}/attachments/a1`, 200, wrong).errors).toHaveLength(2);
  });

  it('reports a path Resend does not have, and no errors where Resend gives no schema', () => {
    expect(validateResponse('GET', '/nowhere', 200, {})).toEqual({
      operationId: null,
      errors: ["no operation in Resend's OpenAPI for GET /nowhere"],
    });
    expect(validateResponse('GET', '/domains', 500, 'anything')).toEqual({
      operationId: 'domains/list',
      errors: [],
    });
  });

  it('refuses a success status the operation does not document (200 where Resend answers 201)', () => {
    expect(validateResponse('POST', '/domains', 200, { id: 'x' })).toEqual({
      operationId: 'domains/create',
      errors: ['answered 200; Resend documents 201 for domains/create'],
    });
  });

  it("compiles every operation's response schema, and finds each operation from its own template", () => {
    for (const operation of resendOperations()) {
      expect(operationFor(operation.method, operation.template)?.operationId).toBe(operation.operationId);
      for (const status of [200, 201, 202]) {
        expect(() => validateResponse(operation.method, operation.template, status, {})).not.toThrow();
      }
    }
  });
});
