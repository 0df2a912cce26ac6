import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../scripts/web-api-types.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The dashboard's API types (web/src/api/openapi.d.ts) are generated at build from the document
 * scripts/web-api-types.ts builds with no database: it must be the document the server serves.
 */
describe("the dashboard's API types", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  it('come from the document GET /v1/openapi.json serves', async () => {
    const served = await server.call('GET', '/v1/openapi.json');
    expect(served.status).toBe(200);
    expect(await openApiDocument()).toEqual(served.body);
  });
});
