import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { sampleVariables, type TemplateVariable, templates, versionsQuery } from '../../api/templates.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { useProject } from '../../project.tsx';

/**
 * A template campaign's own parts in the builder: a field for each variable the template's version
 * declares (the campaign's `variables`), and the message previewed with them through
 * POST /v1/templates/{id}/preview, in a frame with `sandbox=""` (no script, no session).
 */

export type VariableValues = Record<string, string | number | boolean>;

/** The published version the campaign sends: the one it names, else the template's latest. */
export function useCampaignVersion(templateId: string, version: number | null) {
  const { project } = useProject();
  const versions = useQuery({ ...versionsQuery(project.id, templateId), enabled: templateId !== '' });
  const data = versions.data?.data ?? [];
  return { versions, version: version === null ? data[0] : data.find((v) => v.version === version) };
}

/**
 * The subject a campaign saves: null (the template's own, following its later versions too) while a
 * template is chosen and the field holds the template's subject or nothing; else what was typed.
 */
export function ownSubject(
  subject: string | null,
  templateId: string | null | undefined,
  templateSubject: string | undefined,
): string | null {
  const typed = subject?.trim() ?? '';
  if (templateId && (typed === '' || typed === templateSubject?.trim())) return null;
  return typed === '' ? null : (subject as string);
}

/** One value as the API takes it, from what the field holds ('' is no value: the default applies). */
function fieldValue(v: TemplateVariable, raw: string): string | number | boolean | undefined {
  if (raw === '') return undefined;
  if (v.type === 'number') return Number.isFinite(Number(raw)) ? Number(raw) : raw;
  if (v.type === 'boolean') return raw === 'true';
  return raw;
}

function VariableField({
  variable: v,
  value,
  onChange,
}: {
  variable: TemplateVariable;
  value: string | number | boolean | undefined;
  onChange(value: string | number | boolean | undefined): void;
}) {
  const fallback = v.default === undefined ? 'required: no default' : `default: ${String(v.default)}`;
  if (v.type === 'boolean')
    return (
      <SelectField
        label={`${v.name} (yes or no; ${fallback})`}
        value={value === undefined ? '' : String(value)}
        onChange={(raw) => onChange(fieldValue(v, raw))}
        options={[
          { value: '', label: v.default === undefined ? 'Not given' : 'The default' },
          { value: 'true', label: 'Yes (true)' },
          { value: 'false', label: 'No (false)' },
        ]}
      />
    );
  return (
    <Field
      label={v.name}
      type={v.type === 'number' ? 'number' : 'text'}
      hint={`A ${v.type}${v.type === 'date' ? ' (ISO 8601, such as 2026-11-01)' : ''}; ${fallback}.`}
      value={value === undefined ? '' : String(value)}
      onChange={(e) => onChange(fieldValue(v, e.target.value))}
    />
  );
}

/** The template's variables, each with the campaign's value, its default, or "required". */
export function TemplateVariablesFields({
  declared,
  values,
  onChange,
}: {
  declared: TemplateVariable[];
  values: VariableValues;
  onChange(values: VariableValues): void;
}) {
  return (
    <fieldset className="choices" id="campaign-variables">
      <legend>Template variables</legend>
      {declared.length === 0 && <p className="muted small">The template declares none.</p>}
      {declared.map((v) => (
        <VariableField
          key={v.name}
          variable={v}
          value={values[v.name]}
          onChange={(value) => {
            const { [v.name]: _old, ...rest } = values;
            onChange(value === undefined ? rest : { ...rest, [v.name]: value });
          }}
        />
      ))}
    </fieldset>
  );
}

/**
 * The template's version rendered with the campaign's values (a sample stands in for a required one
 * not given yet, and says so), as it would reach someone: its subject and its HTML in a sandboxed frame.
 */
export function TemplatePreview({
  templateId,
  version,
  declared,
  values,
  subject,
}: {
  templateId: string;
  version: number;
  declared: TemplateVariable[];
  values: VariableValues;
  /** The campaign's own subject, which replaces the template's ('' for the template's). */
  subject: string;
}) {
  const { project } = useProject();
  const missing = declared.filter((v) => v.default === undefined && values[v.name] === undefined);
  const variables = { ...sampleVariables(missing), ...values };
  const preview = useQuery({
    queryKey: ['project', project.id, 'template', templateId, 'preview', version, variables],
    queryFn: () => templates.preview(project.id, templateId, { version, variables }),
    placeholderData: keepPreviousData,
  });
  return (
    <section aria-labelledby="campaign-preview-heading" className="campaign-card">
      <h2 id="campaign-preview-heading">Preview</h2>
      <p className="muted small">
        Version {version} of the template with the campaign's variables, for a sample contact.
      </p>
      {missing.length > 0 && (
        <p className="small">Sample values stand in for {missing.map((v) => v.name).join(', ')}.</p>
      )}
      <ErrorMessage error={preview.error} />
      {preview.data && (
        <p className="break">
          <span className="muted">Subject:</span> {subject || preview.data.subject}
        </p>
      )}
      <iframe
        className="campaign-preview"
        title="Preview of the campaign's message"
        sandbox=""
        srcDoc={preview.data?.html ?? ''}
      />
    </section>
  );
}
