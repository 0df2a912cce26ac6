import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { listsQuery, segmentsQuery } from '../../api/audience.ts';
import { audienceQuery, type Campaign, campaigns, checklistQuery } from '../../api/campaigns.ts';
import { templatesQuery } from '../../api/templates.ts';
import { topicsQuery } from '../../api/topics.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { CampaignAdvice } from '../../components/ContentAdvice.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { TestSend } from '../../components/TestSend.tsx';
import { useProject } from '../../project.tsx';
import { AbFields } from './campaign-ab.tsx';
import { ChecklistCard, SendControls } from './campaign-checklist.tsx';
import {
  ownSubject,
  TemplatePreview,
  TemplateVariablesFields,
  useCampaignVersion,
} from './campaign-template.tsx';

function Choices({
  legend,
  options,
  chosen,
  onChange,
}: {
  legend: string;
  options: { id: string; name: string }[];
  chosen: string[];
  onChange(ids: string[]): void;
}) {
  return (
    <fieldset className="choices">
      <legend>{legend}</legend>
      {options.length === 0 && <p className="muted small">None yet.</p>}
      {options.map((o) => (
        <label key={o.id}>
          <input
            type="checkbox"
            checked={chosen.includes(o.id)}
            onChange={(e) =>
              onChange(e.target.checked ? [...chosen, o.id] : chosen.filter((id) => id !== o.id))
            }
          />
          {o.name}
        </label>
      ))}
    </fieldset>
  );
}

/** What the builder edits of a campaign. */
type Draft = Pick<
  Campaign,
  | 'from'
  | 'subject'
  | 'preheader'
  | 'template_id'
  | 'variables'
  | 'html'
  | 'list_ids'
  | 'segment_ids'
  | 'topic_id'
  | 'tracking'
  | 'ab_test'
>;

/** The campaign's topic: only its subscribers get it, and its unsubscribe link leaves that topic only. */
function TopicChoice({
  topics,
  value,
  onChange,
}: {
  topics: { id: string; name: string }[];
  value: string;
  onChange(value: string): void;
}) {
  if (topics.length === 0 && !value) return null;
  return (
    <>
      <SelectField
        label="Topic"
        value={value}
        onChange={onChange}
        options={[
          { value: '', label: 'No topic: an unsubscribe leaves all marketing' },
          ...topics.map((t) => ({ value: t.id, label: t.name })),
        ]}
      />
      {value && (
        <p className="muted small">
          Only the topic's subscribers get it; its unsubscribe link leaves this topic only.
        </p>
      )}
    </>
  );
}

/** A draft: sender, content, audience (with its live count) and tracking; saved, then sent or scheduled. */
export function CampaignBuilder({ campaign }: { campaign: Campaign }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const lists = useQuery(listsQuery(project.id));
  const segs = useQuery(segmentsQuery(project.id));
  const tmpl = useQuery(templatesQuery(project.id));
  const topicList = useQuery(topicsQuery(project.id));
  const [form, setForm] = useState<Draft>({
    from: campaign.from ?? '',
    // null: the template's subject, shown in the field until the person changes it
    subject: campaign.subject,
    preheader: campaign.preheader ?? '',
    template_id: campaign.template_id ?? '',
    variables: campaign.variables ?? {},
    html: campaign.html ?? '',
    list_ids: campaign.list_ids,
    segment_ids: campaign.segment_ids,
    topic_id: campaign.topic_id ?? '',
    tracking: campaign.tracking,
    ab_test: campaign.ab_test ?? null,
  });
  const set = (patch: Partial<typeof form>) => setForm((f) => ({ ...f, ...patch }));
  const [savedAt, setSavedAt] = useState(campaign.created_at);
  const audience = useQuery(audienceQuery(project.id, campaign.id, savedAt));
  const checklist = useQuery(checklistQuery(project.id, campaign.id, savedAt));
  const variables = form.variables ?? {};
  // the version sent: the one the campaign names while its template stays chosen, else the latest
  const { versions, version } = useCampaignVersion(
    form.template_id ?? '',
    form.template_id === campaign.template_id ? campaign.template_version : null,
  );
  const declared = version?.variables ?? [];
  const subject = form.subject ?? version?.subject ?? '';
  const saved = ownSubject(form.subject, form.template_id, version?.subject);
  const save = useMutation({
    mutationFn: () =>
      campaigns.update(project.id, campaign.id, {
        ...form,
        from: form.from || null,
        subject: saved,
        preheader: form.preheader || null,
        template_id: form.template_id || null,
        topic_id: form.topic_id || null,
        // only the values of variables the template declares (another template's are dropped)
        variables: !form.template_id
          ? null
          : version
            ? Object.fromEntries(
                Object.entries(variables).filter(([k]) => declared.some((v) => v.name === k)),
              )
            : variables,
        html: form.template_id ? null : form.html || null,
        ab_test: form.ab_test && {
          ...form.ab_test,
          variants: form.ab_test.variants.map((v) => ({ ...v, subject: v.subject?.trim() || undefined })),
          wait_minutes: form.ab_test.winner_by === 'manual' ? undefined : form.ab_test.wait_minutes,
        },
      }),
    onSuccess: (updated) => {
      queryClient.setQueryData(['project', project.id, 'campaign', campaign.id], updated);
      setSavedAt(new Date().toISOString());
    },
  });
  const published = (tmpl.data?.data ?? []).filter((t) => t.latest_version !== null);
  return (
    <div className="campaign-builder">
      <ActionForm
        label="Campaign"
        className="campaign-card"
        action={save}
        submit="Save draft"
        pendingLabel="Saving…"
        row
      >
        <h2>Message</h2>
        <Field
          label="From"
          placeholder="News <news@example.com>"
          hint="An address on a verified domain."
          value={form.from ?? ''}
          onChange={(e) => set({ from: e.target.value })}
        />
        <Field
          label="Subject"
          hint={form.template_id ? "The template's subject unless you change it." : undefined}
          value={subject}
          onChange={(e) => set({ subject: e.target.value })}
        />
        <Field
          label="Preheader"
          hint="The line after the subject in the inbox."
          value={form.preheader ?? ''}
          onChange={(e) => set({ preheader: e.target.value })}
        />
        <SelectField
          label="Content"
          value={form.template_id ?? ''}
          // choosing a template fills the subject with the template's (editable); leaving it keeps the text
          onChange={(template_id) => set({ template_id, subject: template_id ? null : subject })}
          options={[
            { value: '', label: 'HTML written here' },
            ...published.map((t) => ({ value: t.id, label: `Template: ${t.name}` })),
          ]}
        />
        {form.template_id && (
          <>
            <ErrorMessage error={versions.error} />
            <TemplateVariablesFields
              declared={declared}
              values={variables}
              onChange={(values) => set({ variables: values })}
            />
          </>
        )}
        {!form.template_id && (
          <div className="field">
            <label htmlFor="campaign-html">HTML</label>
            <textarea
              id="campaign-html"
              rows={8}
              value={form.html ?? ''}
              onChange={(e) => set({ html: e.target.value })}
            />
          </div>
        )}
        <Choices
          legend="Lists"
          options={lists.data?.data ?? []}
          chosen={form.list_ids ?? []}
          onChange={(list_ids) => set({ list_ids })}
        />
        <Choices
          legend="Segments"
          options={segs.data?.data ?? []}
          chosen={form.segment_ids ?? []}
          onChange={(segment_ids) => set({ segment_ids })}
        />
        <TopicChoice
          topics={topicList.data?.data ?? []}
          value={form.topic_id ?? ''}
          onChange={(topic_id) => set({ topic_id })}
        />
        <fieldset className="choices">
          <legend>Tracking</legend>
          {(['opens', 'clicks'] as const).map((k) => (
            <label key={k}>
              <input
                type="checkbox"
                checked={form.tracking[k]}
                onChange={(e) => set({ tracking: { ...form.tracking, [k]: e.target.checked } })}
              />
              Track {k}
            </label>
          ))}
        </fieldset>
        <AbFields value={form.ab_test} subject={subject} onChange={(ab_test) => set({ ab_test })} />
      </ActionForm>
      <div className="campaign-side">
        {form.template_id && version && (
          <TemplatePreview
            templateId={form.template_id}
            version={version.version}
            declared={declared}
            values={variables}
            subject={saved ?? ''}
          />
        )}
        <ChecklistCard campaign={campaign} checklist={checklist.data} error={checklist.error} />
        <section aria-label="Advice on the message" className="campaign-card">
          <CampaignAdvice project={project.id} campaignId={campaign.id} savedAt={savedAt} />
        </section>
        {/* the audience's count is the checklist's Audience item; the confirmation says it again */}
        <ErrorMessage error={audience.error} />
        <SendControls campaign={campaign} checklist={checklist.data} recipients={audience.data?.recipients} />
        <section aria-labelledby="test-heading" className="campaign-card">
          <h2 id="test-heading">Test</h2>
          <TestSend
            hint="It sends the campaign as saved, with [Test] in the subject; it is not counted in its stats."
            send={(to) => campaigns.test(project.id, campaign.id, [to])}
          />
        </section>
      </div>
    </div>
  );
}
