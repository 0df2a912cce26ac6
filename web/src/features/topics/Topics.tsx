import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { preferencePreviewQuery, type Topic, topics, topicsQuery } from '../../api/topics.ts';
import { type Column, DataTable } from '../../components/DataTable.tsx';
import { ConfirmButton, DialogButton } from '../../components/Dialog.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatDate, formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { useProject } from '../../project.tsx';

type Default = Topic['default_subscription'];
type Visibility = Topic['visibility'];

const DEFAULTS = [
  { value: 'opt_in', label: 'Everyone gets it until they leave' },
  { value: 'opt_out', label: 'Only people who join it' },
] as const;
const VISIBILITIES = [
  { value: 'public', label: 'Readers see it on their preference page' },
  { value: 'private', label: 'Hidden from readers' },
] as const;

function useRefresh() {
  const { project } = useProject();
  const queryClient = useQueryClient();
  return () => queryClient.invalidateQueries({ queryKey: topicsQuery(project.id).queryKey });
}

function TopicForm({ topic, onDone }: { topic?: Topic; onDone(): void }) {
  const { project } = useProject();
  const refresh = useRefresh();
  const [name, setName] = useState(topic?.name ?? '');
  const [description, setDescription] = useState(topic?.description ?? '');
  const [byDefault, setByDefault] = useState<Default>(topic?.default_subscription ?? 'opt_in');
  const [visibility, setVisibility] = useState<Visibility>(topic?.visibility ?? 'public');
  const save = useMutation({
    mutationFn: () => {
      const fields = { name: name.trim(), description: description.trim() || null, visibility };
      return topic
        ? topics.update(project.id, topic.id, fields)
        : topics.create(project.id, { ...fields, default_subscription: byDefault });
    },
    onSuccess: async () => {
      await refresh();
      onDone();
    },
  });
  return (
    <ActionForm
      label={topic ? `Edit ${topic.name}` : 'New topic'}
      action={save}
      submit={topic ? 'Save topic' : 'Create topic'}
      pendingLabel="Saving…"
      close
    >
      <Field
        label="Name"
        required
        maxLength={50}
        hint="What readers see, for example Product updates."
        value={name}
        onChange={(e) => setName(e.target.value)}
      />
      <Field
        label="Description for readers"
        maxLength={200}
        value={description}
        onChange={(e) => setDescription(e.target.value)}
      />
      {topic ? (
        <p className="muted small">
          {DEFAULTS.find((d) => d.value === topic.default_subscription)?.label}. This cannot change once the
          topic exists.
        </p>
      ) : (
        <SelectField label="Who gets it" value={byDefault} onChange={setByDefault} options={DEFAULTS} />
      )}
      <SelectField
        label="On the preference page"
        value={visibility}
        onChange={setVisibility}
        options={VISIBILITIES}
      />
    </ActionForm>
  );
}

function DeleteTopic({ topic }: { topic: Topic }) {
  const { project } = useProject();
  const refresh = useRefresh();
  const remove = useMutation({ mutationFn: () => topics.remove(project.id, topic.id), onSuccess: refresh });
  return (
    <ConfirmButton
      label="Delete"
      named={topic.name}
      title={`Delete ${topic.name}?`}
      description="Readers' choices of it go with it; their consent history stays."
      confirm="Delete"
      pendingLabel="Deleting…"
      action={remove}
    />
  );
}

const columns: Column<Topic>[] = [
  {
    label: 'Topic',
    className: 'break',
    cell: (t) => (
      <>
        {t.name}
        {t.description && <span className="muted small list-description">{t.description}</span>}
      </>
    ),
  },
  { label: 'Subscribers', cell: (t) => formatNumber(t.subscribers) },
  {
    label: 'Who gets it',
    cell: (t) => (t.default_subscription === 'opt_in' ? 'Everyone, until they leave' : 'Those who join'),
  },
  { label: 'Readers see it', cell: (t) => (t.visibility === 'public' ? 'Yes' : 'No') },
  { label: 'Created', cell: (t) => formatDate(t.created_at) },
  {
    label: 'Actions',
    cell: (t) => (
      <div className="actions">
        <DialogButton className="btn" label="Edit" named={t.name} title={`Edit ${t.name}`}>
          {(close) => <TopicForm topic={t} onDone={close} />}
        </DialogButton>
        <DeleteTopic topic={t} />
      </div>
    ),
  },
];

/** The page a reader reaches from an email's unsubscribe link, as one who never chose sees it. */
function PreferencePreview() {
  const { project } = useProject();
  const preview = useQuery(preferencePreviewQuery(project.id));
  return (
    <section aria-labelledby="preference-preview" className="card">
      <h2 id="preference-preview">What readers see</h2>
      <p className="muted small">
        The page behind every marketing email's unsubscribe link and the footer's preferences link, for a
        reader who never chose: public topics with a switch each, and unsubscribe from everything.
      </p>
      <iframe
        className="preview"
        title="Preference page preview"
        sandbox=""
        srcDoc={preview.data?.html ?? ''}
      />
    </section>
  );
}

/** The project's topics: what kinds of mail it sends, so a reader can leave one and keep the others. */
export default function Topics() {
  const { project } = useProject();
  const list = useQuery(topicsQuery(project.id));
  return (
    <>
      <PageHeader title="Topics">
        <DialogButton label="New topic" title="New topic">
          {(close) => <TopicForm onDone={close} />}
        </DialogButton>
      </PageHeader>
      <p className="muted">
        A topic is a kind of mail you send, like a newsletter or event invitations. A campaign or a flow
        message for a topic goes only to its subscribers, and its unsubscribe link leaves that topic only.
      </p>
      <Loaded
        query={list}
        loading="Loading topics…"
        isEmpty={(data) => data.data.length === 0}
        empty={<p>No topics yet. Without topics, an unsubscribe stops all of this project's marketing.</p>}
      >
        {(data) => <DataTable caption="Topics of this project" rows={data.data} columns={columns} />}
      </Loaded>
      <PreferencePreview />
    </>
  );
}
