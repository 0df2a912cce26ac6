import { CheckboxField, Field } from '../../components/Field.tsx';

/**
 * The terms' address: the server's `/terms` (at its root, like `/api`) leads to POSTHORN_TERMS_URL,
 * or says that none are set.
 */
const TERMS_HREF = '/terms';

/** The name a new account is created with. */
export function NameField({ value, onChange }: { value: string; onChange: (name: string) => void }) {
  return (
    <Field
      label="Your name"
      name="name"
      autoComplete="name"
      required
      maxLength={200}
      value={value}
      onChange={(e) => onChange(e.target.value)}
    />
  );
}

/** The terms of service, ticked by the person (never for them), with a link to read them. */
export function TermsField({
  checked,
  onChange,
}: {
  checked: boolean;
  onChange: (checked: boolean) => void;
}) {
  return (
    <CheckboxField
      label={
        <>
          I accept the{' '}
          <a href={TERMS_HREF} target="_blank" rel="noopener">
            terms of service
          </a>
        </>
      }
      name="accept_terms"
      required
      checked={checked}
      onChange={onChange}
    />
  );
}
