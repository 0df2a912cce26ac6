import type { ReactNode } from 'react';
import { ErrorMessage } from './Alert.tsx';
import { CloseButton } from './Dialog.tsx';
import { Field, SubmitButton } from './Field.tsx';

/** How a mutation is going: what the form shows of it. */
interface Status {
  isPending: boolean;
  error: unknown;
}

/** What submitting does: `onSubmit`, else the action itself (a mutation without variables). */
type Submitting =
  | { action: Status & { mutate(): void }; onSubmit?(): void }
  | { action: Status; onSubmit(): void };

type ActionFormProps = Submitting & {
  /** The form's name for screen readers. */
  label: string;
  /** The submit button, and what it says while the action runs. */
  submit: string;
  pendingLabel?: string;
  /** In a dialog: the button that closes it, beside the submit ("Cancel" unless named). */
  close?: boolean | string;
  /** More buttons or links after the submit, in the same row. */
  more?: ReactNode;
  /** Something to say between the error and the buttons. */
  note?: ReactNode;
  /** The buttons in a row even when the submit is alone. */
  row?: boolean;
  submitClassName?: string;
  className?: string;
  children: ReactNode;
};

/**
 * A form that does one thing: submitting runs `onSubmit` (the page stays), the action's error shows
 * under the fields, then the submit button, alone or in a row with `close` and `more`.
 */
export function ActionForm(props: ActionFormProps) {
  const {
    label,
    action,
    submit,
    pendingLabel,
    close,
    more,
    note,
    row,
    submitClassName,
    className,
    children,
  } = props;
  const button = (
    <SubmitButton
      label={submit}
      pendingLabel={pendingLabel}
      pending={action.isPending}
      className={submitClassName}
    />
  );
  return (
    <form
      className={className}
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        if (props.onSubmit) props.onSubmit();
        else if ('mutate' in props.action) props.action.mutate();
      }}
    >
      {children}
      <ErrorMessage error={action.error} />
      {note}
      {row || close || more ? (
        <div className="actions">
          {button}
          {more}
          {close && <CloseButton label={close === true ? undefined : close} />}
        </div>
      ) : (
        button
      )}
    </form>
  );
}

/** A list's filters: a choice applies at once, typed text with Search (or Enter). */
export function FilterForm({
  label,
  onSearch,
  children,
}: {
  label: string;
  onSearch(): void;
  children: ReactNode;
}) {
  return (
    <form
      className="filters"
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        onSearch();
      }}
    >
      {children}
      <button type="submit" className="btn">
        Search
      </button>
    </form>
  );
}

/** The search box of a list of messages, by address. */
export function AddressSearch({
  label,
  name,
  value,
  onChange,
}: {
  label: string;
  name: string;
  value: string;
  onChange(value: string): void;
}) {
  return (
    <Field
      label={label}
      type="search"
      name={name}
      placeholder="someone@example.com"
      value={value}
      onChange={(e) => onChange(e.target.value)}
    />
  );
}
