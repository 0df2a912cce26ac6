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
import { PagedTable, paging } from '../../components/DataTable.tsx';
import { Dialog } from '../../components/Dialog.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { formatDateTime } from '../../components/format.ts';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';

/** A flow's enrollments: filtered by status or address, newest first; each one's history in a dialog. */

const STATUSES: EnrollmentStatus[] = ['active', 'completed', 'exited', 'failed', 'cancelled'];

/**
 * The engine's own codes (step types, outcomes, exit reasons) in words. Anything else is shown as
 * written: a failure's reason names variables, steps and fields (`account_url`) that must not change.
 */
const CODES = new Set([
  'wait_for_event',
  'update_contact',
  'already_sent',
  'no_date',
  'over_allowance',
  'send_refused',
  'quiet_hours',
  'flow_paused',
  'exit_step',
  'flow_archived',
]);
function words(code: string): string {
  const branch = /^branch_(\d+)$/.exec(code);
  if (branch) return `branch ${branch[1]}`;
  return CODES.has(code) ? code.replace(/_/g, ' ') : code;
}

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
        {enrollment.exit_reason ? ` · ${words(enrollment.exit_reason)}` : ''}
      </p>
      <ol className="flow-history">
        <li>
          <strong>Entered</strong> · {formatDateTime(enrollment.created_at)}
        </li>
        {enrollment.history.map((h) => (
          <li key={`${h.at}-${h.step_id}-${h.outcome}`}>
            <strong>{h.step_id ?? h.type}</strong> ({words(h.type)}): {words(h.outcome)} ·{' '}
            {formatDateTime(h.at)}
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
          onChange={(status) => setFilter({ ...filter, status, page: 1 })}
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
          <PagedTable
            caption="Enrollments"
            rows={list.data.data}
            columns={[
              { label: 'Contact', cell: (e) => e.contact.email, className: 'break' },
              { label: 'Status', cell: (e) => <StatusBadge status={e.status} /> },
              { label: 'At step', cell: (e) => e.current_step ?? '—' },
              { label: 'Entered', cell: (e) => formatDateTime(e.created_at) },
              {
                label: 'History',
                cell: (e) => (
                  <button type="button" className="btn" onClick={() => setOpen(e)}>
                    History<span className="visually-hidden"> of {e.contact.email}</span>
                  </button>
                ),
              },
            ]}
            pager={paging(filter.page, list.data.total, ENROLLMENTS_PER_PAGE, ['enrollment', 'enrollments'], {
              onPage: (page) => setFilter({ ...filter, page }),
            })}
          />
        )
      )}
      {open && <History enrollment={open} onClose={() => setOpen(null)} />}
    </section>
  );
}
