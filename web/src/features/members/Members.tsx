import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useId, useState } from 'react';
import {
  type Invitation,
  invitationsQuery,
  type Member,
  memberKeysQuery,
  members,
  membersQuery,
} from '../../api/audience.ts';
import { type Role, sessionQuery } from '../../api/endpoints.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { CloseButton, ConfirmButton, DialogButton } from '../../components/Dialog.tsx';
import { CheckboxField, Field, SelectField } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatDate } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { canManage, useProject } from '../../project.tsx';

const ROLE_LABELS: Record<Role, string> = {
  owner: 'Owner',
  admin: 'Admin',
  member: 'Member',
};

/** The roles the signed-in person may give: only an Owner gives (or takes) the Owner role. */
function rolesFor(mine: Role | undefined): { value: Role; label: string }[] {
  const roles: Role[] = mine === 'owner' ? ['owner', 'admin', 'member'] : ['admin', 'member'];
  return roles.map((r) => ({ value: r, label: ROLE_LABELS[r] }));
}

function InviteForm({ onSent }: { onSent(invitation: Invitation): void }) {
  const { project } = useProject();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const queryClient = useQueryClient();
  const invite = useMutation({
    mutationFn: () => members.invite(project.id, { email: email.trim(), role }),
    onSuccess: (invitation) => {
      queryClient.invalidateQueries({ queryKey: invitationsQuery(project.id).queryKey });
      onSent(invitation);
    },
  });
  return (
    <ActionForm
      label="Invite a member"
      action={invite}
      submit="Send invitation"
      pendingLabel="Sending…"
      close
    >
      <Field label="Email" type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
      <SelectField label="Role" value={role} onChange={setRole} options={rolesFor(project.role)} />
      <p className="muted small">
        Members read and send; Admins also manage keys, domains, members and settings; Owners also manage
        Owners.
      </p>
    </ActionForm>
  );
}

function InviteDialog() {
  const [sent, setSent] = useState<Invitation | null>(null);
  return (
    <DialogButton label="Invite member" title="Invite a member" onClose={() => setSent(null)}>
      {() =>
        sent ? (
          <>
            <Notice tone="success">
              We emailed an invitation to <strong>{sent.email}</strong> as {ROLE_LABELS[sent.role]}. The link
              works until {formatDate(sent.expires_at)}.
            </Notice>
            <div className="actions">
              <CloseButton label="Done" className="btn primary" />
            </div>
          </>
        ) : (
          <InviteForm onSent={setSent} />
        )
      }
    </DialogButton>
  );
}

/** Refreshes the member list and, when the change is about the signed-in person, their session's roles. */
function useAfterChange(member: Member) {
  const { project, session } = useProject();
  const queryClient = useQueryClient();
  return async () => {
    await queryClient.invalidateQueries({ queryKey: membersQuery(project.id).queryKey });
    if (member.account_id === session.account.id)
      await queryClient.invalidateQueries({ queryKey: sessionQuery.queryKey });
  };
}

function RoleCell({ member }: { member: Member }) {
  const { project } = useProject();
  const after = useAfterChange(member);
  const change = useMutation({
    mutationFn: (role: Role) => members.changeRole(project.id, member.account_id, role),
    onSuccess: after,
  });
  if (member.role === 'owner' && project.role !== 'owner') return <>{ROLE_LABELS[member.role]}</>;
  return (
    <>
      <select
        className="role-select"
        aria-label={`Role of ${member.email}`}
        value={member.role}
        disabled={change.isPending}
        onChange={(e) => change.mutate(e.target.value as Role)}
      >
        {rolesFor(project.role).map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
      <ErrorMessage error={change.error} />
    </>
  );
}

/**
 * The project keys that go with the member (they made them; a project key acts for the project
 * whoever made it), and the choice to keep them working.
 */
function KeysThatGo({
  member,
  self,
  keep,
  onKeepChange,
}: {
  member: Member;
  self: boolean;
  keep: boolean;
  onKeepChange(keep: boolean): void;
}) {
  const { project } = useProject();
  const id = useId();
  const keys = useQuery(memberKeysQuery(project.id, member.account_id));
  if (keys.error) return <ErrorMessage error={keys.error} />;
  if (keys.isPending) return <p role="status">Looking for the API keys {self ? 'you' : 'they'} made…</p>;
  const list = keys.data.data;
  if (list.length === 0)
    return <p className="muted">{self ? 'You' : 'They'} made no API keys in this project that still work.</p>;
  return (
    <section aria-labelledby={`${id}-heading`}>
      <p id={`${id}-heading`}>
        {keep
          ? `These API keys ${self ? 'you' : 'they'} made stay working:`
          : `These API keys ${self ? 'you' : 'they'} made are revoked with ${self ? 'your' : 'their'} membership:`}
      </p>
      <ul aria-label="API keys made by this member">
        {list.map((k) => (
          <li key={k.id}>
            <strong>{k.name}</strong> <code className="muted">{k.token_prefix}…</code>
          </li>
        ))}
      </ul>
      <CheckboxField label="Keep these keys working" checked={keep} onChange={onKeepChange} />
    </section>
  );
}

/** Remove someone, or leave (your own row): the last Owner can do neither, and the API says so. */
function RemoveButton({ member, self }: { member: Member; self: boolean }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [keepKeys, setKeepKeys] = useState(false);
  const after = useAfterChange(member);
  const remove = useMutation({
    mutationFn: () => members.remove(project.id, member.account_id, keepKeys),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: ['project', project.id, 'keys'] });
      if (!self) return after();
      await queryClient.invalidateQueries({ queryKey: sessionQuery.queryKey });
      navigate({ to: '/' });
    },
  });
  return (
    <ConfirmButton
      label={self ? 'Leave project' : 'Remove'}
      named={self ? undefined : member.email}
      title={self ? `Leave ${project.name}?` : `Remove ${member.email}?`}
      description={
        self
          ? 'You lose access to this project until someone invites you again.'
          : 'They lose access to this project at once. Their account stays.'
      }
      confirm={self ? 'Leave' : 'Remove member'}
      action={remove}
    >
      <KeysThatGo member={member} self={self} keep={keepKeys} onKeepChange={setKeepKeys} />
    </ConfirmButton>
  );
}

function MemberTable({ list }: { list: Member[] }) {
  const { project, session } = useProject();
  const manage = canManage(project);
  const isSelf = (m: Member) => m.account_id === session.account.id;
  return (
    <DataTable
      caption="Members of this project"
      rows={list}
      rowKey={(m) => m.account_id}
      columns={[
        {
          label: 'Name',
          cell: (m) => (
            <>
              {m.name}
              {isSelf(m) && <span className="muted"> (you)</span>}
            </>
          ),
        },
        { label: 'Email', cell: (m) => m.email, className: 'break' },
        { label: 'Role', cell: (m) => (manage ? <RoleCell member={m} /> : ROLE_LABELS[m.role]) },
        { label: 'Joined', cell: (m) => formatDate(m.created_at) },
        {
          label: 'Actions',
          cell: (m) => (manage || isSelf(m)) && <RemoveButton member={m} self={isSelf(m)} />,
        },
      ]}
    />
  );
}

function WithdrawButton({ invitation }: { invitation: Invitation }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const withdraw = useMutation({
    mutationFn: () => members.withdraw(project.id, invitation.id),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: invitationsQuery(project.id).queryKey }),
  });
  return (
    <>
      <button type="button" className="btn" onClick={() => withdraw.mutate()} disabled={withdraw.isPending}>
        Withdraw<span className="visually-hidden"> the invitation of {invitation.email}</span>
      </button>
      <ErrorMessage error={withdraw.error} />
    </>
  );
}

/** Invitations sent and not yet accepted: who, as what, until when; withdrawing stops the link. */
function PendingInvitations() {
  const { project } = useProject();
  const list = useQuery(invitationsQuery(project.id));
  if (list.error) return <ErrorMessage error={list.error} />;
  const pending = list.data?.data ?? [];
  if (pending.length === 0) return null;
  return (
    <section aria-labelledby="pending-invitations">
      <h2 id="pending-invitations">Pending invitations</h2>
      <DataTable
        rows={pending}
        columns={[
          { label: 'Email', cell: (i) => i.email, className: 'break' },
          { label: 'Role', cell: (i) => ROLE_LABELS[i.role] },
          { label: 'Link works until', cell: (i) => formatDate(i.expires_at) },
          { label: 'Actions', cell: (i) => <WithdrawButton invitation={i} /> },
        ]}
      />
    </section>
  );
}

/**
 * The project's members and their roles. Everyone sees them and may leave; Owners and Admins also
 * invite by email, see and withdraw pending invitations, change roles and remove members.
 */
export default function Members() {
  const { project } = useProject();
  const manage = canManage(project);
  const list = useQuery(membersQuery(project.id));
  return (
    <>
      <PageHeader title="Members">{manage && <InviteDialog />}</PageHeader>
      {!manage && (
        <Notice>
          You are a Member of {project.name}: you read and send. Its Owners and Admins invite people and
          change roles.
        </Notice>
      )}
      <Loaded query={list} loading="Loading members…">
        {(data) => <MemberTable list={data.data} />}
      </Loaded>
      {manage && <PendingInvitations />}
    </>
  );
}
