import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import {
  ENROLLMENTS_PER_PAGE,
  type Enrollment,
  type EnrollmentFilter,
  type EnrollmentStatus,
  enrollmentsQuery,
  FIRST_ENROLLMENTS,
  type Flow,
} from '../../api/flows.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { Dialog } from '../../components/Dialog.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { formatDateTime } from '../../components/format.ts';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { PageButtons } from '../../components/sending-parts.tsx';
import { useProject } from '../../project.tsx';

/** A flow's enrollments: filtered by status or address, newest first; each one's history in a dialog. */

const STATUSES: EnrollmentStatus[] = ['active', 'completed', 'exited', 'failed', 'cancelled'];

function History({ enrollment, onClose }: { enrollment: Enrollment; onClose(): void }) {
  return (
    <Dialog
      open
      onOpenChange={(open) => !open && onClose()}
      title={`Enrollment of ${enrollment.contact.email}`}
    >
      <p>
        <StatusBadge status={enrollment.status} /> on version {enrollment.version}
        {enrollment.current_step ? ` · at ${enrollment.current_step}` : ''}
        {enrollment.wake_at ? ` · next looked at ${formatDateTime(enrollment.wake_at)}` : ''}
        {enrollment.exit_reason ? ` · ${enrollment.exit_reason.replace(/_/g, ' ')}` : ''}
      </p>
      <ol className="flow-history">
        <li>
          <strong>Entered</strong> · {formatDateTime(enrollment.created_at)}
        </li>
        {enrollment.history.map((h) => (
          <li key={`${h.at}-${h.step_id}-${h.outcome}`}>
            <strong>{h.step_id ?? h.type}</strong> ({h.type.replace(/_/g, ' ')}):{' '}
            {h.outcome.replace(/_/g, ' ')} · {formatDateTime(h.at)}
            {h.email_id && (
              <>
                {' · '}
                <Link to="/emails/$emailId" params={{ emailId: h.email_id }}>
                  the message
                </Link>
              </>
            )}
          </li>
        ))}
      </ol>
      <div className="actions">
        <button type="button" className="btn" onClick={onClose}>
          Close
        </button>
      </div>
    </Dialog>
  );
}

export function FlowEnrollments({ flow }: { flow: Flow }) {
  const { project } = useProject();
  const [filter, setFilter] = useState<EnrollmentFilter>(FIRST_ENROLLMENTS);
  const [open, setOpen] = useState<Enrollment | null>(null);
  const list = useQuery({
    ...enrollmentsQuery(project.id, flow.id, filter),
    placeholderData: keepPreviousData,
  });
  return (
    <section className="campaign-card" aria-labelledby="enrollments-heading">
      <h2 id="enrollments-heading">Enrollments</h2>
      <form className="filters" aria-label="Filter enrollments" onSubmit={(e) => e.preventDefault()}>
        <SelectField
          label="Status"
          value={filter.status}
          onChange={(status) => setFilter({ ...filter, status: status as EnrollmentStatus | '', page: 1 })}
          options={[{ value: '', label: 'Any' }, ...STATUSES.map((s) => ({ value: s, label: s }))]}
        />
        <Field
          label="Address starts with"
          type="search"
          value={filter.search}
          onChange={(e) => setFilter({ ...filter, search: e.target.value, page: 1 })}
        />
      </form>
      <ErrorMessage error={list.error} />
      {list.data && list.data.data.length === 0 ? (
        <p>
          {filter.status || filter.search ? 'No enrollments match.' : 'No one has entered this flow yet.'}
        </p>
      ) : (
        list.data && (
          <>
            <table className="table">
              <caption className="visually-hidden">Enrollments</caption>
              <thead>
                <tr>
                  <th scope="col">Contact</th>
                  <th scope="col">Status</th>
                  <th scope="col">At step</th>
                  <th scope="col">Entered</th>
                  <th scope="col">History</th>
                </tr>
              </thead>
              <tbody>
                {list.data.data.map((e) => (
                  <tr key={e.id}>
                    <th scope="row" data-label="Contact" className="break">
                      {e.contact.email}
                    </th>
                    <td data-label="Status">
                      <StatusBadge status={e.status} />
                    </td>
                    <td data-label="At step">{e.current_step ?? '—'}</td>
                    <td data-label="Entered">{formatDateTime(e.created_at)}</td>
                    <td data-label="History">
                      <button type="button" className="btn" onClick={() => setOpen(e)}>
                        History<span className="visually-hidden"> of {e.contact.email}</span>
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <PageButtons
              page={filter.page}
              total={list.data.total}
              perPage={ENROLLMENTS_PER_PAGE}
              noun={['enrollment', 'enrollments']}
              onPage={(page) => setFilter({ ...filter, page })}
            />
          </>
        )
      )}
      {open && <History enrollment={open} onClose={() => setOpen(null)} />}
    </section>
  );
}
