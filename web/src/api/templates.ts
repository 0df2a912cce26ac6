import { api, projectQuery, type Schemas } from './client.ts';

/** Templates as GET /v1/templates returns them (draft content; `latest_version` once published). */
export type TemplateVariable = Schemas['TemplateVariable'];
export type Template = Schemas['Template'];
export type TemplatePreview = Schemas['TemplatePreview'];
type PreviewInput = Omit<Schemas['TemplatePreviewRequest'], 'version'>;

export const templatesQuery = (project: string) =>
  projectQuery(project, ['templates'], () => api.get('/v1/templates', { project }));

export const startersQuery = (project: string) =>
  projectQuery(project, ['template-starters'], () => api.get('/v1/templates/starters', { project }), {
    staleTime: Number.POSITIVE_INFINITY,
  });

export const templateQuery = (project: string, id: string) =>
  projectQuery(project, ['template', id], () => api.get('/v1/templates/{id}', { project, path: { id } }));

export const versionsQuery = (project: string, id: string) =>
  projectQuery(project, ['template', id, 'versions'], () =>
    api.get('/v1/templates/{id}/versions', { project, path: { id } }),
  );

export const templates = {
  create: (project: string, body: Schemas['CreateTemplateRequest']) =>
    api.post('/v1/templates', { project, body }),
  update: (project: string, id: string, body: Schemas['UpdateTemplateRequest']) =>
    api.patch('/v1/templates/{id}', { project, path: { id }, body }),
  publish: (project: string, id: string) => api.post('/v1/templates/{id}/publish', { project, path: { id } }),
  /** The draft rendered, or a published `version` (what a campaign sends). */
  preview: (project: string, id: string, body: PreviewInput & { version?: number }) =>
    api.post('/v1/templates/{id}/preview', { project, path: { id }, body }),
  test: (project: string, id: string, body: PreviewInput & { to: string }) =>
    api.post('/v1/templates/{id}/test', { project, path: { id }, body }),
};

/** Sample values for a preview: every declared variable without a default gets one of its type. */
export function sampleVariables(variables: TemplateVariable[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const v of variables) {
    if (v.default !== undefined) continue;
    if (v.type === 'number') out[v.name] = 42;
    else if (v.type === 'boolean') out[v.name] = true;
    else if (v.type === 'date') out[v.name] = new Date().toISOString().slice(0, 10);
    else if (/url$/i.test(v.name)) out[v.name] = 'https://example.com/';
    else out[v.name] = v.name === 'company_name' ? 'Acme' : `Sample ${v.name.replace(/_/g, ' ')}`;
  }
  return out;
}

/** The line an API error names (`line 5, column 9`), if any. */
export function errorLine(message: string): number | null {
  const m = /line (\d+)/.exec(message);
  return m ? Number(m[1]) : null;
}
