import { queryOptions } from '@tanstack/react-query';
import { v1 } from './client.ts';

/** Templates as GET /v1/templates returns them (draft content; `latest_version` once published). */
export interface TemplateVariable {
  name: string;
  type: 'string' | 'number' | 'boolean' | 'date';
  default?: string | number | boolean;
}

export interface Template {
  id: string;
  variables: TemplateVariable[];
  name: string;
  subject: string;
  preheader: string | null;
  mjml: string | null;
  html: string | null;
  latest_version: number | null;
  created_at: string;
  updated_at: string;
}

export interface TemplateStarter {
  key: string;
  name: string;
  description: string;
}

export interface TemplateVersion {
  version: number;
  subject: string;
  published_at: string;
}

export interface TemplatePreview {
  subject: string;
  html: string;
  text: string;
}

const enc = encodeURIComponent;

export const templatesQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'templates'],
    queryFn: () => v1<{ data: Template[] }>('GET', projectId, '/templates'),
  });

export const startersQuery = (projectId: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'template-starters'],
    queryFn: () => v1<{ data: TemplateStarter[] }>('GET', projectId, '/templates/starters'),
    staleTime: Number.POSITIVE_INFINITY,
  });

export const templateQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'template', id],
    queryFn: () => v1<Template>('GET', projectId, `/templates/${enc(id)}`),
  });

export const versionsQuery = (projectId: string, id: string) =>
  queryOptions({
    queryKey: ['project', projectId, 'template', id, 'versions'],
    queryFn: () => v1<{ data: TemplateVersion[] }>('GET', projectId, `/templates/${enc(id)}/versions`),
  });

export const templates = {
  create: (projectId: string, body: { name: string; starter?: string; subject?: string; mjml?: string }) =>
    v1<Template>('POST', projectId, '/templates', { body }),
  update: (
    projectId: string,
    id: string,
    body: { subject?: string; preheader?: string | null; mjml?: string },
  ) => v1<Template>('PATCH', projectId, `/templates/${enc(id)}`, { body }),
  remove: (projectId: string, id: string) => v1<null>('DELETE', projectId, `/templates/${enc(id)}`),
  publish: (projectId: string, id: string) =>
    v1<TemplateVersion>('POST', projectId, `/templates/${enc(id)}/publish`),
  preview: (projectId: string, id: string, body: { variables?: Record<string, unknown>; contact?: string }) =>
    v1<TemplatePreview>('POST', projectId, `/templates/${enc(id)}/preview`, { body }),
  test: (
    projectId: string,
    id: string,
    body: { to: string; variables?: Record<string, unknown>; contact?: string },
  ) => v1<{ id: string }>('POST', projectId, `/templates/${enc(id)}/test`, { body }),
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
