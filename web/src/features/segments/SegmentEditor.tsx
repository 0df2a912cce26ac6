import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { type ReactNode, useEffect, useId, useState } from 'react';
import {
  type ContactList,
  listsQuery,
  type Segment,
  segmentCountQuery,
  segmentPreviewQuery,
  segmentQuery,
  segments,
} from '../../api/audience.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { ConfirmButton } from '../../components/Dialog.tsx';
import { Field } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatNumber } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { useProject } from '../../project.tsx';
import { GroupEditor } from './SegmentConditions.tsx';
import { fromDefinition, type Group, newRow, toDefinition } from './segment-rows.ts';

const route = getRouteApi('/app/segments/$segmentId');

/** The value, once it has stopped changing for `ms` (so typing does not send a request per key). */
function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

const contactsText = (n: number) => `${formatNumber(n)} ${n === 1 ? 'contact' : 'contacts'}`;

/** How many contacts the definition matches, recounted (debounced) as it is edited. */
function LiveCount({ group, segmentId }: { group: Group; segmentId: string | null }) {
  const { project } = useProject();
  const result = toDefinition(group);
  const json = 'definition' in result ? JSON.stringify(result.definition) : null;
  const settled = useDebounced(json, 400);
  const preview = useQuery(segmentPreviewQuery(project.id, settled === null ? null : JSON.parse(settled)));
  const saved = useQuery({ ...segmentCountQuery(project.id, segmentId ?? ''), enabled: segmentId !== null });
  let text: ReactNode;
  if ('problem' in result) text = `Complete the conditions to see a count: ${result.problem}.`;
  else if (settled !== json || preview.isFetching) text = 'Counting…';
  else if (preview.data) text = `${contactsText(preview.data.count)} match`;
  else if (preview.data === null)
    text = 'This server cannot count unsaved conditions: save the segment to count it.';
  return (
    <section className="card live-count" aria-labelledby="live-count-title">
      <h2 id="live-count-title">Matching contacts</h2>
      <p className={'problem' in result ? undefined : 'live-count-figure'} role="status">
        {text}
      </p>
      {!('problem' in result) && <ErrorMessage error={preview.error} />}
      {saved.data && <p className="muted">As saved: {contactsText(saved.data.count)}.</p>}
    </section>
  );
}

function DeleteSegment({ segment }: { segment: Segment }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const remove = useMutation({
    mutationFn: () => segments.remove(project.id, segment.id),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: ['project', project.id, 'segments'] });
      navigate({ to: '/segments' });
    },
  });
  return (
    <ConfirmButton
      label="Delete segment"
      title={`Delete ${segment.name}?`}
      description="Its contacts stay; campaigns that target it will no longer find it."
      confirm="Delete"
      pendingLabel="Deleting…"
      action={remove}
    />
  );
}

function EditorForm({ segment, lists }: { segment: Segment | null; lists: ContactList[] }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [name, setName] = useState(segment?.name ?? '');
  const [description, setDescription] = useState(segment?.description ?? '');
  const [group, setGroup] = useState<Group>(() =>
    segment ? fromDefinition(segment.definition) : { mode: 'all', items: [newRow('field')] },
  );
  const [problem, setProblem] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (definition: Segment['definition']) => {
      const body = { name: name.trim(), description: description.trim() || null, definition };
      return segment ? segments.update(project.id, segment.id, body) : segments.create(project.id, body);
    },
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: ['project', project.id, 'segments'] });
      await queryClient.invalidateQueries({ queryKey: ['project', project.id, 'segment'] });
      navigate({ to: '/segments' });
    },
  });
  const submit = () => {
    const result = toDefinition(group);
    setProblem('problem' in result ? `The conditions are not complete: ${result.problem}.` : null);
    if ('definition' in result) save.mutate(result.definition);
  };
  const conditionsId = useId();
  return (
    <ActionForm
      label={segment ? `Edit ${segment.name}` : 'New segment'}
      action={save}
      onSubmit={submit}
      submit="Save segment"
      pendingLabel="Saving…"
      more={
        <Link to="/segments" className="btn">
          Cancel
        </Link>
      }
    >
      <div className="grid">
        <div className="card">
          <Field
            label="Name"
            required
            maxLength={200}
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
          <Field
            label="Description"
            maxLength={1000}
            value={description}
            onChange={(e) => setDescription(e.target.value)}
          />
        </div>
        <LiveCount group={group} segmentId={segment?.id ?? null} />
      </div>
      <section className="card" aria-labelledby={conditionsId}>
        <h2 id={conditionsId}>Conditions</h2>
        <GroupEditor group={group} depth={1} path="" lists={lists} onChange={setGroup} />
      </section>
      {problem && (
        <p className="alert alert-error" role="alert">
          {problem}
        </p>
      )}
    </ActionForm>
  );
}

/** A segment's editor (or a new one's): name, the condition builder with a live count, save, delete. */
export default function SegmentEditor() {
  const { project } = useProject();
  const { segmentId } = route.useParams();
  const isNew = segmentId === 'new';
  const segment = useQuery({ ...segmentQuery(project.id, segmentId), enabled: !isNew });
  const lists = useQuery(listsQuery(project.id));
  const loaded = isNew ? null : segment.data;
  const title = isNew ? 'New segment' : (loaded?.name ?? 'Segment');
  return (
    <>
      <p className="crumbs">
        <Link to="/segments">Segments</Link>
      </p>
      <PageHeader title={title}>{loaded && <DeleteSegment segment={loaded} />}</PageHeader>
      <ErrorMessage error={segment.error ?? lists.error} />
      {(isNew || loaded) && lists.data ? (
        <EditorForm key={loaded?.id ?? 'new'} segment={loaded ?? null} lists={lists.data.data} />
      ) : (
        !segment.error && !lists.error && <p role="status">Loading…</p>
      )}
    </>
  );
}
