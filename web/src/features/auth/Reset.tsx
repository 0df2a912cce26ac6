import { useMutation } from '@tanstack/react-query';
import { getRouteApi, Link } from '@tanstack/react-router';
import { auth } from '../../api/endpoints.ts';
import { Notice } from '../../components/Alert.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { MIN_PASSWORD_LENGTH, useNewPassword } from '../../components/NewPassword.tsx';
import { PublicPage } from './PublicPage.tsx';

const route = getRouteApi('/reset');

/** The page of the emailed reset link: a new password, once; a used or expired link says so. */
export default function Reset() {
  const { token } = route.useSearch();
  const password = useNewPassword();
  const reset = useMutation({ mutationFn: () => auth.resetPassword(token ?? '', password.password) });

  if (!token) {
    return (
      <PublicPage title="Set a new password">
        <Notice tone="warning">
          This link is incomplete. Open the link from the email again, or ask for a new one.
        </Notice>
        <p>
          <Link to="/forgot">Ask for a new link</Link>
        </p>
      </PublicPage>
    );
  }
  if (reset.isSuccess) {
    return (
      <PublicPage title="Password changed">
        <Notice tone="success">
          Your new password is set. Other sessions of your account were signed out.
        </Notice>
        <p>
          <Link to="/sign-in" className="btn primary">
            Sign in
          </Link>
        </p>
      </PublicPage>
    );
  }
  return (
    <PublicPage title="Set a new password">
      <ActionForm
        label="Set a new password"
        action={reset}
        onSubmit={() => password.agrees() && reset.mutate()}
        submit="Set password"
        pendingLabel="Saving…"
        note={
          reset.isError && (
            <p>
              <Link to="/forgot">Ask for a new link</Link>
            </p>
          )
        }
      >
        {password.fields({ hint: `At least ${MIN_PASSWORD_LENGTH} characters.`, names: true })}
      </ActionForm>
    </PublicPage>
  );
}
