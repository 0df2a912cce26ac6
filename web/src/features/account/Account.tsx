import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { account, type SessionItem, sessionsQuery } from '../../api/audience.ts';
import { sessionQuery } from '../../api/endpoints.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { Field } from '../../components/Field.tsx';
import { formatDateTime } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { useProject } from '../../project.tsx';

// the server has the last word (its 400 names the rule); this only saves a round trip
const MIN_LENGTH = 10;

function PasswordCard({ hasPassword }: { hasPassword: boolean }) {
  const queryClient = useQueryClient();
  const id = useId();
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [mismatch, setMismatch] = useState(false);
  const save = useMutation({
    mutationFn: () => account.setPassword(password),
    onSuccess: async () => {
      setPassword('');
      setConfirm('');
      await queryClient.invalidateQueries({ queryKey: sessionQuery.queryKey });
      await queryClient.invalidateQueries({ queryKey: sessionsQuery.queryKey });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setMismatch(password !== confirm);
    if (password === confirm) save.mutate();
  };
  const title = hasPassword ? 'Change your password' : 'Set a password';
  return (
    <section className="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      <p className="muted">
        {hasPassword
          ? 'Signing in by emailed code keeps working too.'
          : 'You sign in with an emailed code; a password lets you sign in without waiting for it.'}
      </p>
      <form onSubmit={submit} aria-label={title}>
        <Field
          label="New password"
          type="password"
          autoComplete="new-password"
          minLength={MIN_LENGTH}
          maxLength={200}
          required
          hint={`At least ${MIN_LENGTH} characters. Your other sessions are signed out.`}
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
        <Field
          label="Repeat the new password"
          type="password"
          autoComplete="new-password"
          required
          value={confirm}
          onChange={(e) => setConfirm(e.target.value)}
        />
        {mismatch && (
          <p className="alert alert-error" role="alert">
            The two passwords differ.
          </p>
        )}
        {save.isSuccess && (
          <Notice tone="success">Password saved. Your other sessions were signed out.</Notice>
        )}
        <ErrorMessage error={save.error} />
        <button type="submit" className="btn primary" disabled={save.isPending}>
          {save.isPending ? 'Saving…' : 'Save password'}
        </button>
      </form>
    </section>
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
  const id = useId();
  const sessions = useQuery(sessionsQuery);
  return (
    <section className="card wide" aria-labelledby={id}>
      <h2 id={id}>Signed-in sessions</h2>
      <ErrorMessage error={sessions.error} />
      {sessions.data && (
        <table className="table">
          <caption className="visually-hidden">Your sessions, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Device</th>
              <th scope="col">IP address</th>
              <th scope="col">Signed in</th>
              <th scope="col">Last used</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {sessions.data.data.map((s) => (
              <tr key={s.id}>
                <th scope="row" data-label="Device" className="break" title={s.user_agent ?? undefined}>
                  {deviceOf(s.user_agent)}
                  {s.current && <span className="badge badge-good session-current">this browser</span>}
                </th>
                <td data-label="IP address" className="break">
                  {s.ip ?? '—'}
                </td>
                <td data-label="Signed in">{formatDateTime(s.created_at)}</td>
                <td data-label="Last used">{formatDateTime(s.last_used_at)}</td>
                <td data-label="Actions">
                  <RevokeSession item={s} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
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
        <section className="card" aria-labelledby="account-who">
          <h2 id="account-who">You</h2>
          <dl className="facts">
            <div className="fact">
              <dt>Name</dt>
              <dd>{name}</dd>
            </div>
            <div className="fact">
              <dt>Email</dt>
              <dd>{email}</dd>
            </div>
          </dl>
        </section>
        <PasswordCard hasPassword={has_password === true} />
        <SessionsCard />
      </div>
    </>
  );
}
