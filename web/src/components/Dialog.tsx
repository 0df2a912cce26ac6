import * as RadixDialog from '@radix-ui/react-dialog';
import { type ReactNode, useState } from 'react';
import { ErrorMessage } from './Alert.tsx';

interface DialogProps {
  open: boolean;
  onOpenChange(open: boolean): void;
  title: string;
  description?: string;
  children: ReactNode;
}

/** A modal dialog (Radix): focus trapped inside, Escape closes, focus returns to the opener. */
export function Dialog({ open, onOpenChange, title, description, children }: DialogProps) {
  return (
    <RadixDialog.Root open={open} onOpenChange={onOpenChange}>
      <RadixDialog.Portal>
        <RadixDialog.Overlay className="dialog-overlay" />
        <RadixDialog.Content
          className="dialog"
          // without a description, say so (Radix links one by default and warns when it is missing)
          {...(description ? {} : { 'aria-describedby': undefined })}
        >
          <RadixDialog.Title className="dialog-title">{title}</RadixDialog.Title>
          {description ? (
            <RadixDialog.Description className="dialog-description">{description}</RadixDialog.Description>
          ) : null}
          {children}
        </RadixDialog.Content>
      </RadixDialog.Portal>
    </RadixDialog.Root>
  );
}

export const DialogClose = RadixDialog.Close;

/** The button that closes the dialog it is in ("Cancel" unless named otherwise). */
export function CloseButton({ label = 'Cancel', className = 'btn' }: { label?: string; className?: string }) {
  return (
    <DialogClose asChild>
      <button type="button" className={className}>
        {label}
      </button>
    </DialogClose>
  );
}

interface DialogButtonProps {
  /** What the button that opens the dialog says. */
  label: ReactNode;
  /** What it acts on, said after `label` to screen readers only ("Revoke" the key "ci"). */
  named?: string;
  className?: string;
  disabled?: boolean;
  /** The id of what tells more about the button (why it is disabled, say). */
  describedBy?: string;
  title: string;
  description?: string;
  /** The dialog's content; `close` closes it (after a change is saved, say). */
  children(close: () => void): ReactNode;
  /** Called as the dialog closes, however it closes. */
  onClose?(): void;
}

/** A button that opens a dialog: a form to fill in, a choice to confirm. */
export function DialogButton({
  label,
  named,
  className = 'btn primary',
  disabled,
  describedBy,
  title,
  description,
  children,
  onClose,
}: DialogButtonProps) {
  const [open, setOpen] = useState(false);
  const change = (next: boolean) => {
    setOpen(next);
    if (!next) onClose?.();
  };
  return (
    <>
      <button
        type="button"
        className={className}
        onClick={() => change(true)}
        disabled={disabled}
        aria-describedby={describedBy}
      >
        {label}
        {named && <span className="visually-hidden"> {named}</span>}
      </button>
      <Dialog open={open} onOpenChange={change} title={title} description={description}>
        {children(() => change(false))}
      </Dialog>
    </>
  );
}

/** What the confirming button starts: a mutation, whose error the dialog shows. */
interface Action {
  mutate(variables: undefined, options: { onSuccess(): void }): void;
  isPending: boolean;
  error: unknown;
}

interface ConfirmActionsProps {
  /** What the confirming button says, and says while `action` runs. */
  confirm: string;
  pendingLabel?: string;
  /** `danger` (the default) for what cannot be undone. */
  tone?: 'danger' | 'primary';
  action: Action;
  /** Called once the action has succeeded (closing the dialog, say). */
  onDone(): void;
  /** What the button that changes nothing says. */
  cancelLabel?: string;
}

/** A confirmation's buttons: the one that acts, and Cancel; the action's error above them. */
export function ConfirmActions({
  confirm,
  pendingLabel,
  tone = 'danger',
  action,
  onDone,
  cancelLabel,
}: ConfirmActionsProps) {
  return (
    <>
      <ErrorMessage error={action.error} />
      <div className="actions">
        <button
          type="button"
          className={`btn ${tone}`}
          onClick={() => action.mutate(undefined, { onSuccess: onDone })}
          disabled={action.isPending}
        >
          {action.isPending && pendingLabel ? pendingLabel : confirm}
        </button>
        <CloseButton label={cancelLabel} />
      </div>
    </>
  );
}

type ConfirmProps = Omit<DialogButtonProps, 'children'> &
  Omit<ConfirmActionsProps, 'onDone'> & {
    /** What else the person should see before deciding. */
    children?: ReactNode;
  };

/**
 * A button that asks first: the dialog says what happens, Cancel keeps things as they are, and the
 * confirming button runs `action`, closing the dialog once it has succeeded.
 */
export function ConfirmButton({
  confirm,
  pendingLabel,
  tone,
  action,
  cancelLabel,
  children,
  className = 'btn danger',
  ...dialog
}: ConfirmProps) {
  return (
    <DialogButton className={className} {...dialog}>
      {(close) => (
        <>
          {children}
          <ConfirmActions
            confirm={confirm}
            pendingLabel={pendingLabel}
            tone={tone}
            action={action}
            onDone={close}
            cancelLabel={cancelLabel}
          />
        </>
      )}
    </DialogButton>
  );
}
