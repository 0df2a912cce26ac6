import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { useEffect, useId, useState } from 'react';
import { type ContactImport, importFinished, importQuery, lists } from '../../api/audience.ts';
import { send } from '../../api/client.ts';
import { inPeoplesWords } from '../../api/words.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { Facts, Section } from '../../components/Section.tsx';
import { useProject } from '../../project.tsx';
import { ImportMapping, type ImportPreview, type MappingChoice, previewFile } from './ImportMapping.tsx';

const route = getRouteApi('/app/contacts/import');

type Started = ContactImport;

/** Starts the import of a file with the choices of the mapping step (when it was shown). */
async function startImport(
  project: string,
  file: File,
  preview: ImportPreview | null,
  choice: MappingChoice,
): Promise<Started> {
  const query = new URLSearchParams({ filename: file.name });
  if (preview) {
    if (!choice.targets.includes('email'))
      throw new Error('Choose the column that holds the email address (Becomes: Email address).');
    query.set(
      'mapping',
      JSON.stringify(Object.fromEntries(preview.columns.map((c, i) => [c.name, choice.targets[i]]))),
    );
  }
  const listIds = [...choice.listIds];
  if (choice.newList.trim()) listIds.push((await lists.create(project, { name: choice.newList.trim() })).id);
  if (listIds.length) query.set('list_ids', listIds.join(','));
  const res = await send('POST', `/v1/contacts/import?${query}`, {
    project,
    file: { content: file, type: 'text/csv' },
    what: 'import',
  });
  return res.json();
}

function UploadForm() {
  const { project } = useProject();
  const navigate = useNavigate({ from: '/contacts/import' });
  const queryClient = useQueryClient();
  const id = useId();
  const [file, setFile] = useState<File | null>(null);
  const [choice, setChoice] = useState<MappingChoice>({ targets: [], listIds: [], newList: '' });
  const preview = useMutation({
    mutationFn: (chosen: File) => previewFile(project.id, chosen),
    onSuccess: (p) => setChoice((c) => ({ ...c, targets: p.columns.map((col) => col.target) })),
  });
  const upload = useMutation({
    mutationFn: (chosen: File) => startImport(project.id, chosen, preview.data ?? null, choice),
    onSuccess: (started) => {
      queryClient.setQueryData(importQuery(project.id, started.id).queryKey, started);
      queryClient.invalidateQueries({ queryKey: ['project', project.id, 'lists'] });
      navigate({ search: { import: started.id } });
    },
  });
  const choose = (chosen: File | null) => {
    setFile(chosen);
    preview.reset();
    if (chosen) preview.mutate(chosen);
  };
  return (
    <ActionForm
      label="Import a CSV file"
      action={upload}
      onSubmit={() => file && upload.mutate(file)}
      submit="Import"
      pendingLabel="Uploading…"
    >
      <div className="field">
        <label htmlFor={id}>CSV file</label>
        <input
          id={id}
          type="file"
          accept=".csv,.tsv,.txt,text/csv"
          required
          aria-describedby={`${id}-hint`}
          onChange={(e) => choose(e.target.files?.[0] ?? null)}
        />
        <p className="hint" id={`${id}-hint`}>
          A file exported from another tool (Mailchimp, Brevo, listmonk, Resend, Substack…) or a spreadsheet,
          its columns separated by commas, semicolons or tabs, with a header row. Once chosen, its columns are
          shown: pick what each becomes and the lists to add the contacts to. An address already here is
          updated, so the same file imported twice adds no one twice; an address twice in the file is imported
          once, from its first row, and the later rows are listed by line. Each new contact's consent is
          recorded as coming from this import.
        </p>
      </div>
      {preview.isPending && <p className="muted">Reading the columns…</p>}
      <ErrorMessage error={preview.error} />
      {preview.data && file && (
        <ImportMapping project={project.id} preview={preview.data} choice={choice} onChange={setChoice} />
      )}
    </ActionForm>
  );
}

const refusedColumns = [
  { label: 'Line', cell: (e: ContactImport['errors'][number]) => formatNumber(e.row) },
  {
    label: 'Reason',
    cell: (e: ContactImport['errors'][number]) => inPeoplesWords(e.error),
    className: 'break',
  },
];

function Outcome({ job }: { job: ContactImport }) {
  const finished = importFinished(job);
  const unlisted = job.error_count - job.errors.length;
  return (
    <>
      <Section title="Progress">
        {job.total ? (
          <progress
            aria-label="Rows read"
            value={job.processed}
            max={job.total}
            className="import-progress"
          />
        ) : (
          !finished && <progress aria-label="Rows read" className="import-progress" />
        )}
        <p role="status">
          {job.status === 'queued' && 'Waiting to start…'}
          {job.status === 'running' &&
            `Importing… ${formatNumber(job.processed)}${job.total ? ` of ${formatNumber(job.total)}` : ''} rows read.`}
          {job.status === 'completed' && `Done: ${formatNumber(job.processed)} rows read.`}
          {job.status === 'failed' && 'The import stopped.'}
        </p>
        {job.failure && (
          <p className="alert alert-error" role="alert">
            {inPeoplesWords(job.failure)}
          </p>
        )}
        <Facts
          rows={[
            ['Created', formatNumber(job.created)],
            ['Updated', formatNumber(job.updated)],
            ['Refused', formatNumber(job.error_count)],
          ]}
        />
      </Section>
      {job.errors.length > 0 && (
        <Section title="Refused rows">
          <p>Each of these rows was left out; the others were imported.</p>
          <DataTable
            caption="Refused rows, by line in the file"
            columns={refusedColumns}
            rows={job.errors}
            rowKey={(e) => e.row}
          />
          {unlisted > 0 && <p>And {formatNumber(unlisted)} more, not listed.</p>}
        </Section>
      )}
      {finished && (
        <div className="actions">
          <Link to="/contacts" className="btn primary">
            See the contacts
          </Link>
          <Link to="/contacts/import" search={{}} className="btn">
            Import another file
          </Link>
        </div>
      )}
    </>
  );
}

/** The import as it runs (asked again every second), then its outcome; the contact lists are refreshed once it ends. */
function ImportStatus({ id }: { id: string }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const job = useQuery(importQuery(project.id, id));
  const finished = importFinished(job.data);
  useEffect(() => {
    if (finished) queryClient.invalidateQueries({ queryKey: ['project', project.id, 'contacts'] });
  }, [finished, queryClient, project.id]);
  return (
    <Loaded query={job} loading="Loading the import…">
      {(data) => <Outcome job={data} />}
    </Loaded>
  );
}

/** Contacts from a CSV file: upload it, follow the import as it runs, then what was created, updated and refused. */
export default function ContactImportPage() {
  const search = route.useSearch();
  return (
    <>
      <PageHeader title="Import contacts" />
      <p>
        <Link to="/contacts">All contacts</Link>
      </p>
      {search.import ? <ImportStatus id={search.import} /> : <UploadForm />}
    </>
  );
}
