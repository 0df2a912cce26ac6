import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { type ApiKey, keys, keysQuery, type NewKey } from '../../api/endpoints.ts';
import { Notice } from '../../components/Alert.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { ConfirmButton, DialogButton } from '../../components/Dialog.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatDate, formatDateTime } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { SecretOnce } from '../../components/SecretOnce.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { canManage, useProject } from '../../project.tsx';

const EXPIRY = [
  { value: '', label: 'Never' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
  { value: '365', label: '365 days' },
];

type Scope = NonNullable<NewKey['scope']>;

function ScopeChoice({ value, onChange }: { value: Scope; onChange(scope: Scope): void }) {
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
  const [scope, setScope] = useState<Scope>('project');
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
  return (
    <ActionForm label="New API key" action={create} submit="Create key" pendingLabel="Creating…" close>
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
    </ActionForm>
  );
}

/** Create a key; the secret lives only in this dialog's memory, never in a cache or the URL. */
function CreateKeyDialog() {
  const [created, setCreated] = useState<ApiKey | null>(null);
  return (
    <DialogButton
      label="Create key"
      title={created ? 'Your new key' : 'Create an API key'}
      onClose={() => setCreated(null)}
    >
      {() =>
        created ? (
          <SecretOnce
            notice={
              <>
                Copy the key <strong>{created.name}</strong> now: it is shown only this once and cannot be
                shown again.
              </>
            }
            label="Secret key"
            copyLabel="Copy"
            secret={created.key ?? ''}
          />
        ) : (
          <CreateKeyForm onCreated={setCreated} />
        )
      }
    </DialogButton>
  );
}

function RevokeButton({ apiKey }: { apiKey: ApiKey }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => keys.revoke(apiKey.id),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: keysQuery(project.id).queryKey }),
  });
  return (
    <ConfirmButton
      label="Revoke"
      named={apiKey.name}
      title={`Revoke ${apiKey.name}?`}
      description="Every request and SMTP login with this key fails from now on. This cannot be undone."
      confirm="Revoke key"
      pendingLabel="Revoking…"
      action={revoke}
    />
  );
}

function KeyTable({ list }: { list: ApiKey[] }) {
  if (list.length === 0) return <p>No keys yet.</p>;
  return (
    <DataTable
      caption="API keys of this project"
      rows={list}
      columns={[
        { label: 'Name', cell: (k) => k.name },
        { label: 'Key', cell: (k) => <code>{k.token_prefix}…</code> },
        { label: 'Scope', cell: (k) => (k.scope === 'all_access' ? 'all access' : 'project') },
        { label: 'Status', cell: (k) => <StatusBadge status={k.status} /> },
        { label: 'Created', cell: (k) => formatDate(k.created_at) },
        { label: 'Last used', cell: (k) => (k.last_used_at ? formatDateTime(k.last_used_at) : 'never') },
        { label: 'Expires', cell: (k) => (k.expires_at ? formatDate(k.expires_at) : 'never') },
        { label: 'Actions', cell: (k) => k.status === 'active' && <RevokeButton apiKey={k} /> },
      ]}
    />
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
      <Loaded query={list} loading="Loading keys…">
        {(data) => <KeyTable list={data.data} />}
      </Loaded>
    </>
  );
}
