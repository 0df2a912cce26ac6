import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { type FormEvent, useId, useState } from 'react';
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
import { Dialog, DialogClose, DialogFormActions } from '../../components/Dialog.tsx';
import { Field, SelectField } from '../../components/Field.tsx';
import { formatDate } from '../../components/format.ts';
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
  const submit = (e: FormEvent) => {
    e.preventDefault();
    invite.mutate();
  };
  return (
    <form onSubmit={submit} aria-label="Invite a member">
      <Field label="Email" type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
      <SelectField
        label="Role"
        value={role}
        onChange={(r) => setRole(r as Role)}
        options={rolesFor(project.role)}
      />
      <p className="muted small">
        Members read and send; Admins also manage keys, domains, members and settings; Owners also manage
        Owners.
      </p>
      <ErrorMessage error={invite.error} />
      <DialogFormActions label="Send invitation" pendingLabel="Sending…" pending={invite.isPending} />
    </form>
  );
}

function InviteDialog() {
  const [open, setOpen] = useState(false);
  const [sent, setSent] = useState<Invitation | null>(null);
  const change = (next: boolean) => {
    setOpen(next);
    if (!next) setSent(null);
  };
  return (
    <>
      <button type="button" className="btn primary" onClick={() => change(true)}>
        Invite member
      </button>
      <Dialog open={open} onOpenChange={change} title="Invite a member">
        {sent ? (
          <>
            <Notice tone="success">
              We emailed an invitation to <strong>{sent.email}</strong> as {ROLE_LABELS[sent.role]}. The link
              works until {formatDate(sent.expires_at)}.
            </Notice>
            <div className="actions">
              <DialogClose asChild>
                <button type="button" className="btn primary">
                  Done
                </button>
              </DialogClose>
            </div>
          </>
        ) : (
          <InviteForm onSent={setSent} />
        )}
      </Dialog>
    </>
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
      <div className="field checkbox">
        <input id={id} type="checkbox" checked={keep} onChange={(e) => onKeepChange(e.target.checked)} />
        <label htmlFor={id}>Keep these keys working</label>
      </div>
    </section>
  );
}

/** Remove someone, or leave (your own row): the last Owner can do neither, and the API says so. */
function RemoveButton({ member, self }: { member: Member; self: boolean }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [open, setOpen] = useState(false);
  const [keepKeys, setKeepKeys] = useState(false);
  const after = useAfterChange(member);
  const remove = useMutation({
    mutationFn: () => members.remove(project.id, member.account_id, keepKeys),
    onSuccess: async () => {
      setOpen(false);
      await queryClient.invalidateQueries({ queryKey: ['project', project.id, 'keys'] });
      if (!self) return after();
      await queryClient.invalidateQueries({ queryKey: sessionQuery.queryKey });
      navigate({ to: '/' });
    },
  });
  const title = self ? `Leave ${project.name}?` : `Remove ${member.email}?`;
  return (
    <>
      <button type="button" className="btn danger" onClick={() => setOpen(true)}>
        {self ? 'Leave project' : 'Remove'}
        {!self && <span className="visually-hidden"> {member.email}</span>}
      </button>
      <Dialog
        open={open}
        onOpenChange={setOpen}
        title={title}
        description={
          self
            ? 'You lose access to this project until someone invites you again.'
            : 'They lose access to this project at once. Their account stays.'
        }
      >
        {open && <KeysThatGo member={member} self={self} keep={keepKeys} onKeepChange={setKeepKeys} />}
        <ErrorMessage error={remove.error} />
        <div className="actions">
          <button
            type="button"
            className="btn danger"
            onClick={() => remove.mutate()}
            disabled={remove.isPending}
          >
            {self ? 'Leave' : 'Remove member'}
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

function MemberTable({ list }: { list: Member[] }) {
  const { project, session } = useProject();
  const manage = canManage(project);
  return (
    <table className="table">
      <caption className="visually-hidden">Members of this project</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Email</th>
          <th scope="col">Role</th>
          <th scope="col">Joined</th>
          <th scope="col">Actions</th>
        </tr>
      </thead>
      <tbody>
        {list.map((m) => {
          const self = m.account_id === session.account.id;
          return (
            <tr key={m.account_id}>
              <th scope="row" data-label="Name">
                {m.name}
                {self && <span className="muted"> (you)</span>}
              </th>
              <td data-label="Email" className="break">
                {m.email}
              </td>
              <td data-label="Role">{manage ? <RoleCell member={m} /> : ROLE_LABELS[m.role]}</td>
              <td data-label="Joined">{formatDate(m.created_at)}</td>
              <td data-label="Actions">{(manage || self) && <RemoveButton member={m} self={self} />}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
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
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Email</th>
            <th scope="col">Role</th>
            <th scope="col">Link works until</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {pending.map((i) => (
            <tr key={i.id}>
              <th scope="row" data-label="Email" className="break">
                {i.email}
              </th>
              <td data-label="Role">{ROLE_LABELS[i.role]}</td>
              <td data-label="Link works until">{formatDate(i.expires_at)}</td>
              <td data-label="Actions">
                <WithdrawButton invitation={i} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
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
      <ErrorMessage error={list.error} />
      {list.isPending ? (
        <p role="status">Loading members…</p>
      ) : (
        list.data && <MemberTable list={list.data.data} />
      )}
      {manage && <PendingInvitations />}
    </>
  );
}
