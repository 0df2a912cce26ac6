import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { type Segment, segmentCountQuery, segmentsQuery } from '../../api/audience.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { formatDate, formatNumber } from '../../components/format.ts';
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

function SegmentTable({ list }: { list: Segment[] }) {
  if (list.length === 0)
    return (
      <p>No segments yet. A segment picks contacts by their fields, lists and events, and stays current.</p>
    );
  return (
    <table className="table">
      <caption className="visually-hidden">Segments of this project</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Description</th>
          <th scope="col">Contacts now</th>
          <th scope="col">Updated</th>
        </tr>
      </thead>
      <tbody>
        {list.map((s) => (
          <tr key={s.id}>
            <th scope="row" data-label="Name">
              <Link to="/segments/$segmentId" params={{ segmentId: s.id }}>
                {s.name}
              </Link>
            </th>
            <td data-label="Description" className="break">
              {s.description ?? '—'}
            </td>
            <td data-label="Contacts now">
              <SegmentCount id={s.id} />
            </td>
            <td data-label="Updated">{formatDate(s.updated_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
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
      <ErrorMessage error={list.error} />
      {list.isPending ? (
        <p role="status">Loading segments…</p>
      ) : (
        list.data && <SegmentTable list={list.data.data} />
      )}
    </>
  );
}
