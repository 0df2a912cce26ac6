import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { domainQuery, domains, domainsQuery } from '../../api/sending.ts';
import { Notice } from '../../components/Alert.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { DialogButton } from '../../components/Dialog.tsx';
import { Field } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatDate, formatDateTime } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { canManage, useProject } from '../../project.tsx';
import { hasPlaceholderRecords, PlaceholderNotice } from './DomainDetail.tsx';

/** Add a domain, then open its page: the records to publish are what comes next. */
function AddDomainForm({ onAdded }: { onAdded(): void }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [name, setName] = useState('');
  const add = useMutation({
    mutationFn: () => domains.add(project.id, name.trim()),
    onSuccess: (domain) => {
      queryClient.setQueryData(domainQuery(project.id, domain.id).queryKey, domain);
      queryClient.invalidateQueries({ queryKey: domainsQuery(project.id).queryKey });
      onAdded();
      navigate({ to: '/domains/$domainId', params: { domainId: domain.id } });
    },
  });
  return (
    <ActionForm label="New domain" action={add} submit="Add domain" pendingLabel="Adding…" close>
      <Field
        label="Domain"
        name="domain"
        required
        maxLength={253}
        autoComplete="off"
        spellCheck={false}
        placeholder="example.com"
        hint="The domain in your From addresses, like example.com or mail.example.com."
        value={name}
        onChange={(e) => setName(e.target.value)}
      />
    </ActionForm>
  );
}

/** The project's sending domains; Owners and Admins add them. */
export default function Domains() {
  const { project } = useProject();
  const list = useQuery(domainsQuery(project.id));
  return (
    <>
      <PageHeader title="Domains">
        {canManage(project) && (
          <DialogButton label="Add domain" title="Add a sending domain">
            {(close) => <AddDomainForm onAdded={close} />}
          </DialogButton>
        )}
      </PageHeader>
      <p className="muted">
        Send from your own domain: add it, publish the DNS records its page lists, and check. Mail from a
        verified domain is signed with its own DKIM key, so it passes DMARC.
      </p>
      <Loaded
        query={list}
        loading="Loading domains…"
        isEmpty={(data) => data.data.length === 0}
        empty={
          <Notice>
            No domains yet.{' '}
            {canManage(project)
              ? 'Until one is verified, mail goes from the shared domain.'
              : 'An Owner or Admin of this project can add one.'}
          </Notice>
        }
      >
        {(data) => (
          <>
            {data.data.some(hasPlaceholderRecords) && <PlaceholderNotice />}
            <DataTable
              caption="Sending domains of this project"
              rows={data.data}
              columns={[
                {
                  label: 'Domain',
                  className: 'break',
                  cell: (d) => (
                    <Link to="/domains/$domainId" params={{ domainId: d.id }}>
                      {d.name}
                    </Link>
                  ),
                },
                { label: 'Status', cell: (d) => <StatusBadge status={d.status} /> },
                { label: 'Inbound', cell: (d) => (d.inbound_enabled ? 'on' : 'off') },
                { label: 'Added', cell: (d) => formatDate(d.created_at) },
                {
                  label: 'Last checked',
                  cell: (d) => (d.last_checked_at ? formatDateTime(d.last_checked_at) : 'never'),
                },
              ]}
            />
          </>
        )}
      </Loaded>
    </>
  );
}
