import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { useEffect, useId, useState } from 'react';
import { type ContactImport, importFinished, importQuery, imports } from '../../api/audience.ts';
import { DataTable } from '../../components/DataTable.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { Facts, Section } from '../../components/Section.tsx';
import { useProject } from '../../project.tsx';

const route = getRouteApi('/app/contacts/import');

function UploadForm() {
  const { project } = useProject();
  const navigate = useNavigate({ from: '/contacts/import' });
  const queryClient = useQueryClient();
  const id = useId();
  const [file, setFile] = useState<File | null>(null);
  const upload = useMutation({
    mutationFn: (chosen: File) => imports.start(project.id, chosen),
    onSuccess: (started) => {
      queryClient.setQueryData(importQuery(project.id, started.id).queryKey, started);
      navigate({ search: { import: started.id } });
    },
  });
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
          accept=".csv,text/csv"
          required
          aria-describedby={`${id}-hint`}
          onChange={(e) => setFile(e.target.files?.[0] ?? null)}
        />
        <p className="hint" id={`${id}-hint`}>
          A header row with an <code>email</code> column; <code>first_name</code>, <code>last_name</code> and{' '}
          <code>subscribed</code> fill those fields, any other column becomes a property. An address already
          here is updated (properties merged), so the same file imported twice adds no one twice. The import
          runs in the background; this page follows it.
        </p>
      </div>
    </ActionForm>
  );
}

const refusedColumns = [
  { label: 'Line', cell: (e: ContactImport['errors'][number]) => formatNumber(e.row) },
  { label: 'Reason', cell: (e: ContactImport['errors'][number]) => e.error, className: 'break' },
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
            {job.failure}
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
