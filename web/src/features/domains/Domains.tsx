import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { type FormEvent, useState } from 'react';
import { type Domain, domainQuery, domains, domainsQuery } from '../../api/sending.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { Dialog, DialogFormActions } from '../../components/Dialog.tsx';
import { Field } from '../../components/Field.tsx';
import { formatDate, formatDateTime } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { canManage, useProject } from '../../project.tsx';

/** Add a domain, then open its page: the records to publish are what comes next. */
function AddDomainDialog() {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const add = useMutation({
    mutationFn: () => domains.add(project.id, name.trim()),
    onSuccess: (domain) => {
      queryClient.setQueryData(domainQuery(project.id, domain.id).queryKey, domain);
      queryClient.invalidateQueries({ queryKey: domainsQuery(project.id).queryKey });
      setOpen(false);
      navigate({ to: '/domains/$domainId', params: { domainId: domain.id } });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate();
  };
  return (
    <>
      <button type="button" className="btn primary" onClick={() => setOpen(true)}>
        Add domain
      </button>
      <Dialog open={open} onOpenChange={setOpen} title="Add a sending domain">
        <form onSubmit={submit} aria-label="New domain">
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
          <ErrorMessage error={add.error} />
          <DialogFormActions label="Add domain" pendingLabel="Adding…" pending={add.isPending} />
        </form>
      </Dialog>
    </>
  );
}

function DomainTable({ list }: { list: Domain[] }) {
  return (
    <table className="table">
      <caption className="visually-hidden">Sending domains of this project</caption>
      <thead>
        <tr>
          <th scope="col">Domain</th>
          <th scope="col">Status</th>
          <th scope="col">Inbound</th>
          <th scope="col">Added</th>
          <th scope="col">Last checked</th>
        </tr>
      </thead>
      <tbody>
        {list.map((d) => (
          <tr key={d.id}>
            <th scope="row" data-label="Domain" className="break">
              <Link to="/domains/$domainId" params={{ domainId: d.id }}>
                {d.name}
              </Link>
            </th>
            <td data-label="Status">
              <StatusBadge status={d.status} />
            </td>
            <td data-label="Inbound">{d.inbound_enabled ? 'on' : 'off'}</td>
            <td data-label="Added">{formatDate(d.created_at)}</td>
            <td data-label="Last checked">
              {d.last_checked_at ? formatDateTime(d.last_checked_at) : 'never'}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The project's sending domains; Owners and Admins add them. */
export default function Domains() {
  const { project } = useProject();
  const list = useQuery(domainsQuery(project.id));
  return (
    <>
      <PageHeader title="Domains">{canManage(project) && <AddDomainDialog />}</PageHeader>
      <p className="muted">
        Send from your own domain: add it, publish the DNS records its page lists, and check. Mail from a
        verified domain is signed with its own DKIM key, so it passes DMARC.
      </p>
      <ErrorMessage error={list.error} />
      {list.isPending ? (
        <p role="status">Loading domains…</p>
      ) : list.data && list.data.data.length === 0 ? (
        <Notice>
          No domains yet.{' '}
          {canManage(project)
            ? 'Until one is verified, mail goes from the shared domain.'
            : 'An Owner or Admin of this project can add one.'}
        </Notice>
      ) : (
        list.data && <DomainTable list={list.data.data} />
      )}
    </>
  );
}
