import { api, projectQuery, type Schemas } from './client.ts';

export type BreakerTrip = Schemas['BreakerTrip'];

/** The circuit breaker's open decisions of the project (GET /v1/breaker). */
export const breakerQuery = (project: string) =>
  projectQuery(project, ['breaker'], () => api.get('/v1/breaker', { project }));

export const breaker = {
  /** Resumes the stops of the project's domains and of the project, with the admin's reason. */
  resume: (project: string, reason: string) => api.post('/v1/breaker/resume', { project, body: { reason } }),
};
