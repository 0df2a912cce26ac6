import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { type InvitationPreview, invitationQuery, invitations, sessionQuery } from '../../api/endpoints.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { rememberProject } from '../../project.tsx';
import { useSignOut } from '../../sign-out.ts';
import { NameField, TermsField } from './AccountFields.tsx';
import { PublicPage } from './PublicPage.tsx';

const route = getRouteApi('/invite');

/** Accepting: a new account gives its name and ticks the terms box itself; a signed-in one just joins. */
function AcceptForm({
  token,
  invitation,
  newAccount,
}: {
  token: string;
  invitation: InvitationPreview;
  newAccount: boolean;
}) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [name, setName] = useState('');
  const [terms, setTerms] = useState(false);
  const accept = useMutation({
    mutationFn: () => invitations.accept(token, newAccount ? { name: name.trim(), accept_terms: terms } : {}),
    onSuccess: async () => {
      rememberProject(invitation.project.id);
      await queryClient.fetchQuery({ ...sessionQuery, staleTime: 0 });
      await navigate({ to: '/' });
    },
  });
  return (
    <ActionForm
      label="Accept the invitation"
      action={accept}
      submit={newAccount ? 'Create account and join' : 'Accept and join'}
      pendingLabel="Joining…"
    >
      {newAccount && (
        <>
          <p>Accepting creates your Posthorn account for {invitation.email}.</p>
          <NameField value={name} onChange={setName} />
          <TermsField checked={terms} onChange={setTerms} />
        </>
      )}
    </ActionForm>
  );
}

function WrongAccount({ signedInAs, invitation }: { signedInAs: string; invitation: InvitationPreview }) {
  const signOut = useSignOut(() => undefined);
  return (
    <>
      <Notice tone="warning">
        You are signed in as {signedInAs}, and this invitation is for {invitation.email}. Sign out to accept
        it as {invitation.email}.
      </Notice>
      <button type="button" className="btn" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
        Sign out
      </button>
    </>
  );
}

function Decision({ token, invitation }: { token: string; invitation: InvitationPreview }) {
  const session = useQuery(sessionQuery);
  const back = `/invite?token=${encodeURIComponent(token)}`;
  if (session.isPending) return <p role="status">Loading…</p>;
  const signedInAs = session.data?.account.email;
  if (signedInAs && signedInAs.toLowerCase() !== invitation.email.toLowerCase())
    return <WrongAccount signedInAs={signedInAs} invitation={invitation} />;
  if (!signedInAs && invitation.account_exists) {
    return (
      <>
        <p>{invitation.email} already has an account: sign in to accept.</p>
        <Link to="/sign-in" search={{ next: back }} className="btn primary">
          Sign in to accept
        </Link>
      </>
    );
  }
  return <AcceptForm token={token} invitation={invitation} newAccount={!signedInAs} />;
}

/** The page of an invitation link: who invites whom to which project, and the way to accept. */
export default function Invite() {
  const { token = '' } = route.useSearch();
  const preview = useQuery({ ...invitationQuery(token), enabled: token !== '' });
  if (!token || preview.isError || (preview.data && preview.data.status !== 'pending')) {
    const status = preview.data?.status;
    return (
      <PublicPage title="Invitation">
        {!token && <Notice tone="warning">This link is incomplete.</Notice>}
        <ErrorMessage error={preview.error} />
        {status && (
          <Notice tone="warning">
            {status === 'accepted' ? 'This invitation was already accepted.' : 'This invitation has expired.'}
          </Notice>
        )}
        <p>Ask the person who invited you for a new invitation, or sign in if you have already joined.</p>
        <p>
          <Link to="/sign-in">Sign in</Link>
        </p>
      </PublicPage>
    );
  }
  if (!preview.data) {
    return (
      <PublicPage title="Invitation">
        <p role="status">Loading the invitation…</p>
      </PublicPage>
    );
  }
  const invitation = preview.data;
  return (
    <PublicPage title={`Join ${invitation.project.name}`}>
      <p>
        {invitation.invited_by
          ? `${invitation.invited_by.name} (${invitation.invited_by.email})`
          : 'A project Owner'}{' '}
        invites <strong>{invitation.email}</strong> to the project <strong>{invitation.project.name}</strong>{' '}
        as <strong>{invitation.role}</strong>.
      </p>
      <Decision token={token} invitation={invitation} />
    </PublicPage>
  );
}
