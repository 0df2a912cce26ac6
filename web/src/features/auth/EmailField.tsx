import { Field } from '../../components/Field.tsx';

/** The account's email address on the signed-out pages. */
export function EmailField({
  autoComplete,
  value,
  onChange,
}: {
  autoComplete: 'email' | 'username';
  value: string;
  onChange(email: string): void;
}) {
  return (
    <Field
      label="Email"
      type="email"
      name="email"
      autoComplete={autoComplete}
      required
      value={value}
      onChange={(e) => onChange(e.target.value)}
    />
  );
}
