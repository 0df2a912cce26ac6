import { api, projectQuery, type Schemas } from './client.ts';

/** Topics (`/v1/topics`) and a contact's choices of them (`/v1/contacts/{id}/topics`). */

export type Topic = Schemas['Topic'];
export type ContactTopic = Schemas['ContactTopic'];
export type Subscription = ContactTopic['subscription'];

export const topicsQuery = (project: string) =>
  projectQuery(project, ['topics'], () => api.get('/v1/topics', { project }));

export const contactTopicsQuery = (project: string, contact: string) =>
  projectQuery(project, ['contact', contact, 'topics'], () =>
    api.get('/v1/contacts/{id}/topics', { project, path: { id: contact } }),
  );

export const preferencePreviewQuery = (project: string) =>
  projectQuery(project, ['topics', 'preference-page'], () =>
    api.get('/v1/topics/preference-page', { project }),
  );

export const topics = {
  create: (project: string, body: Schemas['CreateTopicRequest']) => api.post('/v1/topics', { project, body }),
  update: (project: string, id: string, body: Schemas['UpdateTopicRequest']) =>
    api.patch('/v1/topics/{id}', { project, path: { id }, body }),
  remove: (project: string, id: string) => api.delete('/v1/topics/{id}', { project, path: { id } }),
  choose: (project: string, contact: string, id: string, subscription: Subscription) =>
    api.patch('/v1/contacts/{id}/topics', {
      project,
      path: { id: contact },
      body: { topics: [{ id, subscription }] },
    }),
};
