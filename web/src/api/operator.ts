import { queryOptions } from '@tanstack/react-query';
import { api, type Schemas } from './client.ts';

/**
 * The operator's view (GET /v1/admin/routes): served to a browser on the server's own machine (or
 * with the metrics token), refused elsewhere, so the Routes screen shows only where it answers.
 */

export type RoutesReport = Schemas['RoutesReport'];
export type RouteStatus = Schemas['RouteStatus'];

/** How often the Routes screen reads the routes again while it is shown. */
export const ROUTES_REFRESH_MS = 5_000;

export const routesReportQuery = queryOptions({
  queryKey: ['operator', 'routes'],
  queryFn: () => api.get('/v1/admin/routes'),
  retry: false,
  staleTime: 5_000,
});
