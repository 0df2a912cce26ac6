import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link } from '@tanstack/react-router';
import { useState } from 'react';
import { type Campaign, campaignQuery, campaigns } from '../../api/campaigns.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { ConfirmButton } from '../../components/Dialog.tsx';
import { Field } from '../../components/Field.tsx';
import { formatDateTime, formatNumber } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';
import { CampaignActivityCard } from './campaign-activity.tsx';
import { CampaignBuilder } from './campaign-builder.tsx';
import { WaitingNote } from './campaign-local-time.tsx';
import './campaigns.css';
import { inPeoplesWords } from '../../api/words.ts';

const route = getRouteApi('/app/campaigns/$campaignId');

function Count({ label, value }: { label: string; value: number | undefined }) {
  return (
    <div className="count">
      <dt>{label}</dt>
      <dd>{value === undefined ? '—' : formatNumber(value)}</dd>
    </div>
  );
}

/** Pauses, resumes or cancels the campaign; the answer names what changed (the rest stays as loaded). */
function useCampaignAction(campaign: Campaign, action: 'pause' | 'resume' | 'cancel') {
  const { project } = useProject();
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (reason?: string) =>
      action === 'resume'
        ? campaigns.resume(project.id, campaign.id, reason)
        : campaigns[action](project.id, campaign.id),
    onSuccess: (updated) =>
      queryClient.setQueryData(campaignQuery(project.id, campaign.id).queryKey, (old) =>
        old ? { ...old, ...updated } : old,
      ),
  });
}

function Actions({ campaign }: { campaign: Campaign }) {
  const [reason, setReason] = useState('');
  const pause = useCampaignAction(campaign, 'pause');
  const resume = useCampaignAction(campaign, 'resume');
  const cancel = useCampaignAction(campaign, 'cancel');
  const busy = pause.isPending || resume.isPending || cancel.isPending;
  const can = {
    pause: campaign.status === 'sending' || campaign.status === 'scheduled',
    resume: campaign.status === 'paused',
    cancel: ['sending', 'scheduled', 'paused'].includes(campaign.status),
  };
  if (!can.pause && !can.resume && !can.cancel) return null;
  return (
    <div className="actions">
      {can.pause && (
        <button type="button" className="btn" onClick={() => pause.mutate(undefined)} disabled={busy}>
          Pause
        </button>
      )}
      {can.resume && !campaign.paused_reason && (
        <button type="button" className="btn" onClick={() => resume.mutate(undefined)} disabled={busy}>
          Resume
        </button>
      )}
      {can.resume && campaign.paused_reason && (
        <form
          className="resume-form"
          onSubmit={(e) => {
            e.preventDefault();
            resume.mutate(reason);
          }}
        >
          <Field
            label="Why resume?"
            hint="Recorded with your name: what was fixed, or why the campaign should go on."
            value={reason}
            onChange={(e) => setReason(e.target.value)}
            required
            maxLength={1000}
          />
          <button type="submit" className="btn" disabled={busy || !reason.trim()}>
            Resume with this reason
          </button>
        </form>
      )}
      {can.cancel && (
        <ConfirmButton
          label="Cancel campaign"
          disabled={busy}
          title="Cancel the campaign?"
          description="Messages not sent yet are dropped."
          confirm="Cancel campaign"
          pendingLabel="Cancelling…"
          cancelLabel="Keep the campaign"
          action={cancel}
        />
      )}
      <ErrorMessage error={pause.error ?? resume.error} />
    </div>
  );
}

/** The days a warming-up domain plans this campaign's pending recipients for. */
function WarmupNote({ warmup }: { warmup: NonNullable<Campaign['warmup']> }) {
  const days = warmup.planned_days;
  return (
    <Notice>
      {warmup.domain} is warming up: day {warmup.day} of {warmup.days}, {formatNumber(warmup.today.used)} of{' '}
      {formatNumber(warmup.today.volume)} messages today.{' '}
      {warmup.pending === 0
        ? 'Every recipient has been written.'
        : `${formatNumber(warmup.pending)} recipients to go, engaged contacts first: ${days
            .slice(0, 4)
            .map((d) => `${d.date} ${formatNumber(d.messages)}`)
            .join(', ')}${days.length > 4 ? `, then ${days.length - 4} more days` : ''}${
            warmup.after_plan > 0 ? `; ${formatNumber(warmup.after_plan)} after the plan ends` : ''
          }.`}
    </Notice>
  );
}

/** While it sends (refreshed every 2 s, no reload) and afterwards: counts, engagement, revenue, A/B. */
function Progress({ campaign }: { campaign: Campaign }) {
  const s = campaign.stats;
  const recipients = campaign.recipient_count ?? s?.recipients ?? 0;
  const sent = s?.sent ?? 0;
  return (
    <>
      {campaign.status === 'failed' && (
        <Notice tone="warning">{campaign.failure_reason && inPeoplesWords(campaign.failure_reason)}</Notice>
      )}
      {campaign.status === 'paused' && campaign.paused_reason && (
        <Notice tone="warning">{inPeoplesWords(campaign.paused_reason)}</Notice>
      )}
      {campaign.status === 'scheduled' && (
        <Notice>Sending starts {formatDateTime(campaign.scheduled_at)}.</Notice>
      )}
      {campaign.warmup && <WarmupNote warmup={campaign.warmup} />}
      <WaitingNote campaign={campaign} />
      <section aria-labelledby="progress-heading" className="campaign-card">
        <h2 id="progress-heading">Progress</h2>
        <progress max={Math.max(recipients, 1)} value={sent} aria-label="Sent of recipients" />
        <p aria-live="polite" className="progress-line">
          Sent {formatNumber(sent)} of {formatNumber(recipients)}
          {campaign.status === 'sending' ? ' · updating every 2 seconds' : ''}
          {campaign.stats_as_of
            ? ` · counted ${formatDateTime(campaign.stats_as_of)}, again every 15 seconds`
            : ''}
        </p>
        <dl className="counts">
          <Count label="Recipients" value={recipients} />
          <Count label="Sent" value={s?.sent} />
          <Count label="Delivered" value={s?.delivered} />
          <Count label="Bounced" value={s?.bounced} />
          <Count label="Complaints" value={s?.complained} />
          <Count label="Opened (people)" value={s?.opens?.unique} />
          <Count label="Clicked (people)" value={s?.clicks?.unique} />
          <Count label="Unsubscribed" value={s?.unsubscribed} />
        </dl>
        {s && s.revenue.length > 0 && (
          <p>
            Revenue:{' '}
            {s.revenue
              .map((r) =>
                new Intl.NumberFormat(undefined, { style: 'currency', currency: r.currency }).format(
                  r.amount,
                ),
              )
              .join(' · ')}
          </p>
        )}
        <p className="muted small">
          Started {formatDateTime(campaign.started_at)}
          {campaign.finished_at ? ` · finished ${formatDateTime(campaign.finished_at)}` : ''}
        </p>
        <Actions campaign={campaign} />
      </section>
      <CampaignActivityCard campaign={campaign} />
      {campaign.ab && (
        <section aria-labelledby="ab-heading" className="campaign-card">
          <h2 id="ab-heading">A/B test: {campaign.ab.phase.replace(/_/g, ' ')}</h2>
          <DataTable
            rows={campaign.ab.variants}
            rowKey={(v) => v.index}
            columns={[
              {
                label: 'Variant',
                cell: (v) => `${v.name}${campaign.ab?.winner_variant === v.index ? ' (winner)' : ''}`,
              },
              { label: 'Sent', cell: (v) => formatNumber(v.sent) },
              { label: 'Opened', cell: (v) => formatNumber(v.opens_unique) },
              { label: 'Clicked', cell: (v) => formatNumber(v.clicks_unique) },
            ]}
          />
        </section>
      )}
    </>
  );
}

/** One campaign: its builder while a draft; its live progress, results and controls afterwards. */
export default function CampaignDetail() {
  const { project } = useProject();
  const { campaignId } = route.useParams();
  const campaign = useQuery(campaignQuery(project.id, campaignId));
  const c = campaign.data;
  return (
    <>
      <PageHeader title={c?.name ?? 'Campaign'}>{c && <StatusBadge status={c.status} />}</PageHeader>
      <p>
        <Link to="/campaigns">All campaigns</Link>
      </p>
      <ErrorMessage error={campaign.error} />
      {campaign.isPending && <p role="status">Loading the campaign…</p>}
      {c && (c.status === 'draft' ? <CampaignBuilder campaign={c} /> : <Progress campaign={c} />)}
    </>
  );
}
