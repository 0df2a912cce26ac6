import { type InputHTMLAttributes, type ReactNode, type TextareaHTMLAttributes, useId } from 'react';

interface FieldProps extends Omit<InputHTMLAttributes<HTMLInputElement>, 'id'> {
  label: string;
  hint?: string;
}

/** A labelled input with an optional hint tied to it (aria-describedby). */
export function Field({ label, hint, ...input }: FieldProps) {
  const id = useId();
  const hintId = `${id}-hint`;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input id={id} aria-describedby={hint ? hintId : undefined} {...input} />
      {hint && (
        <p className="hint" id={hintId}>
          {hint}
        </p>
      )}
    </div>
  );
}

interface TextAreaFieldProps extends Omit<TextareaHTMLAttributes<HTMLTextAreaElement>, 'id'> {
  label: string;
  hint?: ReactNode;
}

/** A labelled text area with an optional hint tied to it (aria-describedby). */
export function TextAreaField({ label, hint, ...area }: TextAreaFieldProps) {
  const id = useId();
  const hintId = `${id}-hint`;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <textarea id={id} aria-describedby={hint ? hintId : undefined} {...area} />
      {hint && (
        <p className="hint" id={hintId}>
          {hint}
        </p>
      )}
    </div>
  );
}

interface CheckboxFieldProps extends Omit<InputHTMLAttributes<HTMLInputElement>, 'id' | 'type' | 'onChange'> {
  label: ReactNode;
  onChange(checked: boolean): void;
}

/** A checkbox with its label after it. */
export function CheckboxField({ label, onChange, ...input }: CheckboxFieldProps) {
  const id = useId();
  return (
    <div className="field checkbox">
      <input id={id} type="checkbox" onChange={(e) => onChange(e.target.checked)} {...input} />
      <label htmlFor={id}>{label}</label>
    </div>
  );
}

interface SelectFieldProps<T extends string> {
  label: string;
  /** The option chosen; its type is the options' (they are checked against it). */
  value: T;
  onChange(value: NoInfer<T>): void;
  options: readonly { value: NoInfer<T>; label: string }[];
  name?: string;
}

/** A labelled native select: keyboard and screen-reader friendly on every device. */
export function SelectField<T extends string>({
  label,
  value,
  onChange,
  options,
  name,
}: SelectFieldProps<T>) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {/* the value is one of the options, each a T */}
      <select id={id} name={name} value={value} onChange={(e) => onChange(e.target.value as T)}>
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </div>
  );
}

/** A form's submit button, which says what it is doing while `pending`. */
export function SubmitButton({
  label,
  pendingLabel,
  pending,
  className = 'btn primary',
}: {
  label: string;
  pendingLabel?: string;
  pending: boolean;
  className?: string;
}) {
  return (
    <button type="submit" className={className} disabled={pending}>
      {pending && pendingLabel ? pendingLabel : label}
    </button>
  );
}
