import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { type ApiKey, keys, keysQuery, type NewKey } from '../../api/endpoints.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { CopyButton } from '../../components/CopyButton.tsx';
import { Dialog, DialogClose, DialogFormActions } from '../../components/Dialog.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { formatDate, formatDateTime } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { canManage, useProject } from '../../project.tsx';

const EXPIRY = [
  { value: '', label: 'Never' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
  { value: '365', label: '365 days' },
];

function ScopeChoice({
  value,
  onChange,
}: {
  value: NewKey['scope'];
  onChange(scope: NewKey['scope']): void;
}) {
  const options = [
    { value: 'project', label: 'This project', hint: 'sends and reads in this project only' },
    { value: 'all_access', label: 'All access', hint: 'every project you administer, and the account API' },
  ] as const;
  return (
    <fieldset className="field">
      <legend>Scope</legend>
      {options.map((o) => (
        <label key={o.value} className="radio">
          <input
            type="radio"
            name="scope"
            value={o.value}
            checked={value === o.value}
            onChange={() => onChange(o.value)}
          />{' '}
          {o.label} <span className="muted">({o.hint})</span>
        </label>
      ))}
    </fieldset>
  );
}

function CreateKeyForm({ onCreated }: { onCreated(key: ApiKey): void }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [scope, setScope] = useState<NewKey['scope']>('project');
  const [expiry, setExpiry] = useState('');
  const create = useMutation({
    mutationFn: () =>
      keys.create(project.id, {
        name: name.trim(),
        scope,
        expires_in_days: expiry ? (Number(expiry) as NewKey['expires_in_days']) : null,
      }),
    onSuccess: (key) => {
      queryClient.invalidateQueries({ queryKey: keysQuery(project.id).queryKey });
      onCreated(key);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <form onSubmit={submit} aria-label="New API key">
      <Field
        label="Name"
        name="name"
        required
        maxLength={100}
        hint="What the key is for, e.g. “production web server”."
        value={name}
        onChange={(e) => setName(e.target.value)}
      />
      <ScopeChoice value={scope} onChange={setScope} />
      <SelectField
        label="Expires"
        name="expires_in_days"
        value={expiry}
        onChange={setExpiry}
        options={EXPIRY}
      />
      <ErrorMessage error={create.error} />
      <DialogFormActions label="Create key" pendingLabel="Creating…" pending={create.isPending} />
    </form>
  );
}

function SecretOnce({ apiKey }: { apiKey: ApiKey }) {
  return (
    <div className="secret">
      <Notice tone="warning">
        Copy the key <strong>{apiKey.name}</strong> now: it is shown only this once and cannot be shown again.
      </Notice>
      <div className="field">
        <label htmlFor="new-key-secret">Secret key</label>
        <div className="copy-row">
          <input
            id="new-key-secret"
            readOnly
            value={apiKey.key}
            onFocus={(e) => e.target.select()}
            spellCheck={false}
          />
          <CopyButton value={apiKey.key ?? ''} />
        </div>
      </div>
      <div className="actions">
        <DialogClose asChild>
          <button type="button" className="btn primary">
            I have copied it
          </button>
        </DialogClose>
      </div>
    </div>
  );
}

/** Create a key; the secret lives only in this dialog's memory, never in a cache or the URL. */
function CreateKeyDialog() {
  const [open, setOpen] = useState(false);
  const [created, setCreated] = useState<ApiKey | null>(null);
  const change = (next: boolean) => {
    setOpen(next);
    if (!next) setCreated(null);
  };
  return (
    <>
      <button type="button" className="btn primary" onClick={() => change(true)}>
        Create key
      </button>
      <Dialog open={open} onOpenChange={change} title={created ? 'Your new key' : 'Create an API key'}>
        {created ? <SecretOnce apiKey={created} /> : <CreateKeyForm onCreated={setCreated} />}
      </Dialog>
    </>
  );
}

function RevokeButton({ apiKey }: { apiKey: ApiKey }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const revoke = useMutation({
    mutationFn: () => keys.revoke(apiKey.id),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: keysQuery(project.id).queryKey });
      setOpen(false);
    },
  });
  return (
    <>
      <button type="button" className="btn danger" onClick={() => setOpen(true)}>
        Revoke<span className="visually-hidden"> {apiKey.name}</span>
      </button>
      <Dialog
        open={open}
        onOpenChange={setOpen}
        title={`Revoke ${apiKey.name}?`}
        description="Every request and SMTP login with this key fails from now on. This cannot be undone."
      >
        <ErrorMessage error={revoke.error} />
        <div className="actions">
          <button
            type="button"
            className="btn danger"
            onClick={() => revoke.mutate()}
            disabled={revoke.isPending}
          >
            {revoke.isPending ? 'Revoking…' : 'Revoke key'}
          </button>
          <DialogClose asChild>
            <button type="button" className="btn">
              Cancel
            </button>
          </DialogClose>
        </div>
      </Dialog>
    </>
  );
}

function KeyTable({ list }: { list: ApiKey[] }) {
  if (list.length === 0) return <p>No keys yet.</p>;
  return (
    <table className="table">
      <caption className="visually-hidden">API keys of this project</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Key</th>
          <th scope="col">Scope</th>
          <th scope="col">Status</th>
          <th scope="col">Created</th>
          <th scope="col">Last used</th>
          <th scope="col">Expires</th>
          <th scope="col">Actions</th>
        </tr>
      </thead>
      <tbody>
        {list.map((k) => (
          <tr key={k.id}>
            <th scope="row" data-label="Name">
              {k.name}
            </th>
            <td data-label="Key">
              <code>{k.token_prefix}…</code>
            </td>
            <td data-label="Scope">{k.scope === 'all_access' ? 'all access' : 'project'}</td>
            <td data-label="Status">
              <StatusBadge status={k.status} />
            </td>
            <td data-label="Created">{formatDate(k.created_at)}</td>
            <td data-label="Last used">{k.last_used_at ? formatDateTime(k.last_used_at) : 'never'}</td>
            <td data-label="Expires">{k.expires_at ? formatDate(k.expires_at) : 'never'}</td>
            <td data-label="Actions">{k.status === 'active' && <RevokeButton apiKey={k} />}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The project's API keys: list, create (the secret shown once), revoke. Owners and Admins only. */
export default function Keys() {
  const { project } = useProject();
  const manage = canManage(project);
  const list = useQuery({ ...keysQuery(project.id), enabled: manage });
  if (!manage) {
    return (
      <>
        <PageHeader title="API keys" />
        <Notice>
          As a Member of {project.name} you read and send; its Owners and Admins see and manage its API keys.
        </Notice>
      </>
    );
  }
  return (
    <>
      <PageHeader title="API keys">
        <CreateKeyDialog />
      </PageHeader>
      <ErrorMessage error={list.error} />
      {list.isPending ? <p role="status">Loading keys…</p> : list.data && <KeyTable list={list.data.data} />}
    </>
  );
}
