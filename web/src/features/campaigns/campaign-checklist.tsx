import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { type ReactNode, useId, useState } from 'react';
import { type Campaign, type CampaignChecklist, campaigns } from '../../api/campaigns.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { type CheckItem, Checklist } from '../../components/Checklist.tsx';
import { ConfirmButton } from '../../components/Dialog.tsx';
import { Field } from '../../components/Field.tsx';
import { formatNumber } from '../../components/format.ts';
import { useProject } from '../../project.tsx';
import { LocalTimeChoice } from './campaign-local-time.tsx';

/**
 * The pre-send checklist (GET /v1/campaigns/{id}/checklist: the checks the send runs, each with the
 * server's message) with a link to the screen that fixes each item, and the send and schedule
 * controls, which stay off, saying why, while an item is not done.
 */

type ItemId = CampaignChecklist['items'][number]['id'];

const LABEL: Record<ItemId, string> = {
  status: 'Status',
  account: 'Account email',
  footer: 'Footer postal address',
  variables: 'Template variables',
  content: 'Content',
  sender: 'Sending domain',
  audience: 'Audience',
  allowance: 'Plan allowance',
  gate: 'Bulk-sender checks',
  dkim: 'DKIM, aligned',
  spf: 'SPF, aligned',
  dmarc: 'DMARC record',
  reverse_dns: 'Reverse DNS of the sending addresses',
  unsubscribe: 'One-click unsubscribe',
  tracking: 'Tracking',
};

/** Where each item is fixed: another screen, or this campaign's own form (named, not linked). */
function fixFor(id: ItemId, campaign: Campaign): ReactNode {
  const template = campaign.template_id && (
    <Link to="/templates/$templateId" params={{ templateId: campaign.template_id }}>
      the template
    </Link>
  );
  switch (id) {
    case 'account':
      return <Link to="/account">Your account</Link>;
    case 'footer':
      return <Link to="/settings">Set the footer address in Settings</Link>;
    case 'variables':
      return (
        <>
          Give the values under Template variables in the form, or defaults in {template ?? 'the template'}.
        </>
      );
    case 'content':
      return template ? (
        <>Fix the form's fields, or {template} (publish it after a change).</>
      ) : (
        <>Fix the subject and HTML in the form.</>
      );
    case 'sender':
      return <Link to="/domains">Add and verify the domain in Domains</Link>;
    case 'audience':
      return (
        <>
          Choose lists or segments in the form, or add people: <Link to="/lists">Lists</Link>,{' '}
          <Link to="/segments">Segments</Link>, <Link to="/contacts">Contacts</Link>.
        </>
      );
    case 'allowance':
      return (
        <>
          See <Link to="/settings">Plan and usage in Settings</Link>, or send from your own domain (
          <Link to="/domains">Domains</Link>).
        </>
      );
    case 'dkim':
    case 'spf':
    case 'dmarc':
      return <Link to="/domains">Publish the records shown for the domain in Domains</Link>;
    case 'reverse_dns':
      return <>Ask the provider of each address to set its reverse DNS to its EHLO name.</>;
    case 'unsubscribe':
      return <>Make the public URL (POSTHORN_PUBLIC_URL) reach this server directly.</>;
    default:
      return undefined;
  }
}

export function ChecklistCard({
  campaign,
  checklist,
  error,
}: {
  campaign: Campaign;
  checklist: CampaignChecklist | undefined;
  error: unknown;
}) {
  const items: CheckItem[] = (checklist?.items ?? []).map((i) => ({
    key: i.id,
    label: LABEL[i.id],
    status: i.status,
    message: i.message,
    fix: fixFor(i.id, campaign),
  }));
  return (
    <section aria-labelledby="checklist-heading" className="campaign-card">
      <h2 id="checklist-heading">Before sending</h2>
      <ErrorMessage error={error} />
      {checklist && (
        <>
          <p className="muted small">The checks the send runs, as the campaign is saved.</p>
          <Checklist label="Before sending" items={items} />
        </>
      )}
    </section>
  );
}

const timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** The bulk-sender gate's items: only these may be overridden, by an admin with a reason. */
const GATE_ITEMS = new Set<ItemId>(['dkim', 'spf', 'dmarc', 'reverse_dns', 'unsubscribe']);

/** Sends although only the bulk-sender checks fail, with the admin's reason (recorded by the server). */
function SendAnyway({ campaign, onSent }: { campaign: Campaign; onSent: () => void }) {
  const { project } = useProject();
  const [reason, setReason] = useState('');
  const send = useMutation({
    mutationFn: () => campaigns.sendAnyway(project.id, campaign.id, reason.trim()),
    onSuccess: onSent,
  });
  return (
    <form
      className="schedule"
      aria-label="Send anyway"
      onSubmit={(e) => {
        e.preventDefault();
        send.mutate();
      }}
    >
      <Field
        label="Send anyway, because"
        required
        maxLength={1000}
        value={reason}
        onChange={(e) => setReason(e.target.value)}
        hint="Only the bulk-sender checks fail. A project admin may send anyway; the reason is recorded with what failed."
      />
      <ErrorMessage error={send.error} />
      <button type="submit" className="btn" disabled={send.isPending || !reason.trim()}>
        {send.isPending ? 'Starting…' : 'Send anyway'}
      </button>
    </form>
  );
}

/**
 * Sends now after a confirmation that states how many people it reaches, or schedules it; both off
 * while the checklist has an item not done, with the reason beside them.
 */
export function SendControls({
  campaign,
  checklist,
  recipients,
}: {
  campaign: Campaign;
  checklist: CampaignChecklist | undefined;
  recipients: number | undefined;
}) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const reasonId = useId();
  const [at, setAt] = useState('');
  const refresh = () =>
    queryClient.invalidateQueries({ queryKey: ['project', project.id, 'campaign', campaign.id] });
  const send = useMutation({
    mutationFn: () => campaigns.send(project.id, campaign.id),
    onSuccess: refresh,
  });
  const schedule = useMutation({
    mutationFn: () => campaigns.schedule(project.id, campaign.id, new Date(at).toISOString()),
    onSuccess: refresh,
  });
  const count = recipients === undefined ? '…' : formatNumber(recipients);
  const open = checklist?.items.filter((i) => i.status !== 'ok') ?? [];
  const blocked = !checklist?.ready;
  return (
    <section aria-labelledby="send-heading" className="campaign-card">
      <h2 id="send-heading">Send</h2>
      {checklist && blocked && (
        <p id={reasonId} className="alert alert-warning">
          Sending waits for the checklist: {open.map((i) => LABEL[i.id]).join(', ')}{' '}
          {open.length === 1 ? 'is' : 'are'} not done yet.
        </p>
      )}
      <div className="actions">
        <ConfirmButton
          label="Send now…"
          className="btn primary"
          disabled={blocked || !recipients}
          describedBy={blocked ? reasonId : undefined}
          title={`Send to ${count} recipients?`}
          description="Sending starts at once and cannot be undone; you can pause or cancel what is not sent yet."
          confirm={`Send to ${count} recipients`}
          pendingLabel="Starting…"
          tone="primary"
          action={send}
        />
      </div>
      {checklist && blocked && open.every((i) => GATE_ITEMS.has(i.id)) && (
        <SendAnyway campaign={campaign} onSent={refresh} />
      )}
      <LocalTimeChoice campaign={campaign} />
      <form
        className="schedule"
        aria-label="Schedule"
        onSubmit={(e) => {
          e.preventDefault();
          schedule.mutate();
        }}
      >
        <Field
          label="Or send at"
          type="datetime-local"
          required
          value={at}
          onChange={(e) => setAt(e.target.value)}
          hint={`Your time zone: ${timeZone}.`}
        />
        <ErrorMessage error={schedule.error} />
        <button
          type="submit"
          className="btn"
          disabled={schedule.isPending || !at || blocked}
          aria-describedby={blocked ? reasonId : undefined}
        >
          Schedule
        </button>
      </form>
    </section>
  );
}
