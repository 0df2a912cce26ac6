import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { segmentCountQuery, segmentsQuery } from '../../api/audience.ts';
import { DataTable } from '../../components/DataTable.tsx';
import { formatDate, formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { useProject } from '../../project.tsx';

/** A segment's member count, computed now by the API (a segment's members are never stored). */
function SegmentCount({ id }: { id: string }) {
  const { project } = useProject();
  const count = useQuery(segmentCountQuery(project.id, id));
  if (count.isError) return <span className="muted">not counted</span>;
  if (!count.data) return <span className="muted">counting…</span>;
  return (
    <Link to="/contacts" search={{ segment: id }}>
      {formatNumber(count.data.count)} {count.data.count === 1 ? 'contact' : 'contacts'}
    </Link>
  );
}

/** The project's segments with how many contacts each holds now. */
export default function Segments() {
  const { project } = useProject();
  const list = useQuery(segmentsQuery(project.id));
  return (
    <>
      <PageHeader title="Segments">
        <Link to="/segments/$segmentId" params={{ segmentId: 'new' }} className="btn primary">
          New segment
        </Link>
      </PageHeader>
      <Loaded
        query={list}
        loading="Loading segments…"
        isEmpty={(data) => data.data.length === 0}
        empty={
          <p>
            No segments yet. A segment picks contacts by their fields, lists and events, and stays current.
          </p>
        }
      >
        {(data) => (
          <DataTable
            caption="Segments of this project"
            rows={data.data}
            columns={[
              {
                label: 'Name',
                cell: (s) => (
                  <Link to="/segments/$segmentId" params={{ segmentId: s.id }}>
                    {s.name}
                  </Link>
                ),
              },
              { label: 'Description', cell: (s) => s.description ?? '—', className: 'break' },
              { label: 'Contacts now', cell: (s) => <SegmentCount id={s.id} /> },
              { label: 'Updated', cell: (s) => formatDate(s.updated_at) },
            ]}
          />
        )}
      </Loaded>
    </>
  );
}
