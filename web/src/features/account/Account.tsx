import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { account, type SessionItem, sessionsQuery } from '../../api/audience.ts';
import { sessionQuery } from '../../api/endpoints.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { formatDateTime } from '../../components/format.ts';
import { MIN_PASSWORD_LENGTH, useNewPassword } from '../../components/NewPassword.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { Facts, Section } from '../../components/Section.tsx';
import { useProject } from '../../project.tsx';

function PasswordCard({ hasPassword }: { hasPassword: boolean }) {
  const queryClient = useQueryClient();
  const password = useNewPassword();
  const save = useMutation({
    mutationFn: () => account.setPassword(password.password),
    onSuccess: async () => {
      password.clear();
      await queryClient.invalidateQueries({ queryKey: sessionQuery.queryKey });
      await queryClient.invalidateQueries({ queryKey: sessionsQuery.queryKey });
    },
  });
  const title = hasPassword ? 'Change your password' : 'Set a password';
  return (
    <Section title={title}>
      <p className="muted">
        {hasPassword
          ? 'Signing in by emailed code keeps working too.'
          : 'You sign in with an emailed code; a password lets you sign in without waiting for it.'}
      </p>
      <ActionForm
        label={title}
        action={save}
        onSubmit={() => password.agrees() && save.mutate()}
        submit="Save password"
        pendingLabel="Saving…"
      >
        {password.fields({
          hint: `At least ${MIN_PASSWORD_LENGTH} characters. Your other sessions are signed out.`,
          maxLength: 200,
        })}
        {save.isSuccess && (
          <Notice tone="success">Password saved. Your other sessions were signed out.</Notice>
        )}
      </ActionForm>
    </Section>
  );
}

/** A short description of a browser from its user agent: the browser and system, if recognisable. */
function deviceOf(userAgent: string | null): string {
  if (!userAgent) return 'unknown device';
  const browser = /(Edg|Firefox|Chrome|Safari|curl|node)[/ ]?[\d.]*/i.exec(userAgent)?.[1];
  const system = /(Windows|Mac OS X|Android|iPhone|iPad|Linux)/.exec(userAgent)?.[1];
  const known = [browser === 'Edg' ? 'Edge' : browser, system && `on ${system.replace('Mac OS X', 'macOS')}`];
  return known.filter(Boolean).join(' ') || userAgent.slice(0, 60);
}

function RevokeSession({ item }: { item: SessionItem }) {
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => account.revokeSession(item.id),
    onSuccess: async () => {
      // signing this browser out: the shell sends the person to the sign-in page
      if (item.current) queryClient.setQueryData(sessionQuery.queryKey, null);
      else await queryClient.invalidateQueries({ queryKey: sessionsQuery.queryKey });
    },
  });
  return (
    <>
      <button
        type="button"
        className="btn danger"
        onClick={() => revoke.mutate()}
        disabled={revoke.isPending}
      >
        {item.current ? 'End this session' : 'Revoke'}
        {!item.current && (
          <span className="visually-hidden"> the session from {formatDateTime(item.created_at)}</span>
        )}
      </button>
      <ErrorMessage error={revoke.error} />
    </>
  );
}

function SessionsCard() {
  const sessions = useQuery(sessionsQuery);
  return (
    <Section title="Signed-in sessions" wide>
      <ErrorMessage error={sessions.error} />
      {sessions.data && (
        <DataTable
          caption="Your sessions, newest first"
          rows={sessions.data.data}
          columns={[
            {
              label: 'Device',
              className: 'break',
              title: (s) => s.user_agent ?? undefined,
              cell: (s) => (
                <>
                  {deviceOf(s.user_agent)}
                  {s.current && <span className="badge badge-good session-current">this browser</span>}
                </>
              ),
            },
            { label: 'IP address', cell: (s) => s.ip ?? '—', className: 'break' },
            { label: 'Signed in', cell: (s) => formatDateTime(s.created_at) },
            { label: 'Last used', cell: (s) => formatDateTime(s.last_used_at) },
            { label: 'Actions', cell: (s) => <RevokeSession item={s} /> },
          ]}
        />
      )}
    </Section>
  );
}

/** The signed-in person's account: password (set or change) and sessions (revocable). */
export default function Account() {
  const { session } = useProject();
  const { name, email, has_password } = session.account;
  return (
    <>
      <PageHeader title="Account" />
      <div className="detail">
        <Section title="You">
          <Facts
            rows={[
              ['Name', name],
              ['Email', email],
            ]}
          />
        </Section>
        <PasswordCard hasPassword={has_password === true} />
        <SessionsCard />
      </div>
    </>
  );
}
