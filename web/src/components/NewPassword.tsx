import { useState } from 'react';
import { Field } from './Field.tsx';

// the server has the last word (its 400 names the rule); this only saves a round trip
export const MIN_PASSWORD_LENGTH = 10;

/** A new password typed twice: its fields, and the check that the two agree (made on submit). */
export function useNewPassword() {
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [mismatch, setMismatch] = useState(false);
  return {
    password,
    /** Whether the two agree; if not, the fields say so. */
    agrees() {
      setMismatch(password !== confirm);
      return password === confirm;
    },
    clear() {
      setPassword('');
      setConfirm('');
    },
    fields: (props: { hint: string; names?: boolean; maxLength?: number }) => (
      <>
        <Field
          label="New password"
          type="password"
          name={props.names ? 'password' : undefined}
          autoComplete="new-password"
          minLength={MIN_PASSWORD_LENGTH}
          maxLength={props.maxLength}
          required
          hint={props.hint}
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
        <Field
          label="Repeat the new password"
          type="password"
          name={props.names ? 'confirm' : undefined}
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
      </>
    ),
  };
}
