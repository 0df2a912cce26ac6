import * as RadixDialog from '@radix-ui/react-dialog';
import type { ReactNode } from 'react';

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

/** A dialog form's buttons: the submit (its own label while pending) and Cancel, which closes the dialog. */
export function DialogFormActions({
  label,
  pendingLabel,
  pending,
}: {
  label: string;
  pendingLabel: string;
  pending: boolean;
}) {
  return (
    <div className="actions">
      <button type="submit" className="btn primary" disabled={pending}>
        {pending ? pendingLabel : label}
      </button>
      <DialogClose asChild>
        <button type="button" className="btn">
          Cancel
        </button>
      </DialogClose>
    </div>
  );
}
