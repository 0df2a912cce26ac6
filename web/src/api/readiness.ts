import { queryOptions } from '@tanstack/react-query';
import { api, type Schemas } from './client.ts';

/**
 * The operator's production readiness (issue 48, build item 4): the same checks as
 * `posthorn admin doctor`, answered to a browser on the server's own machine (or with the metrics
 * token) like the routes, refused elsewhere. Each read runs the checks again (DNS, TLS,
 * connections), so the screen reads it when opened and when asked, never on a timer.
 */

export type ReadinessReport = Schemas['ReadinessReport'];
export type ReadinessCheck = Schemas['ReadinessCheck'];

export const readinessQuery = queryOptions({
  queryKey: ['operator', 'readiness'],
  queryFn: () => api.get('/v1/admin/readiness'),
  retry: false,
  staleTime: 30_000,
});
