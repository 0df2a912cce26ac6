import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { type Campaign, campaignQuery, campaigns } from '../../api/campaigns.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { formatDateTime, formatNumber } from '../../components/format.ts';
import { useProject } from '../../project.tsx';

/**
 * When a campaign's messages leave: all as soon as sending starts, or each at a time of day in the
 * recipient's own time zone (the campaign's local time, saved as soon as it is chosen), and, while
 * it sends, who is still waiting for which moment.
 */

/** The schedule step's choice: everyone at once, or each recipient at a local time. */
export function LocalTimeChoice({ campaign }: { campaign: Campaign }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const name = useId();
  const timeId = useId();
  const [time, setTime] = useState(campaign.local_time ?? '09:00');
  const save = useMutation({
    mutationFn: (localTime: string | null) =>
      campaigns.update(project.id, campaign.id, { local_time: localTime }),
    onSuccess: (updated) =>
      queryClient.setQueryData(campaignQuery(project.id, campaign.id).queryKey, (old) =>
        old ? { ...old, local_time: updated.local_time } : old,
      ),
  });
  const [local, setLocal] = useState(campaign.local_time !== null && campaign.local_time !== undefined);
  const choose = (atLocalTime: boolean) => {
    setLocal(atLocalTime);
    save.mutate(atLocalTime ? time : null);
  };
  return (
    <fieldset className="local-time" aria-label="Delivery time" disabled={save.isPending}>
      <legend>Delivery time</legend>
      <label>
        <input type="radio" name={name} checked={!local} onChange={() => choose(false)} /> Everyone as soon as
        sending starts
      </label>
      <label>
        <input type="radio" name={name} checked={local} onChange={() => choose(true)} /> Each recipient at a
        time of day in their own time zone
      </label>
      <div className="field">
        <label htmlFor={timeId}>Local time</label>
        <input
          id={timeId}
          type="time"
          required
          value={time}
          onChange={(e) => {
            setTime(e.target.value);
            if (local && e.target.value) save.mutate(e.target.value);
          }}
        />
      </div>
      {local && (
        <p className="hint">
          Each recipient gets it at {time} in their time zone (their timezone property, else the project's
          time zone in Settings) within the 24 hours after sending starts; quiet hours move it to their end.
        </p>
      )}
      <ErrorMessage error={save.error} />
    </fieldset>
  );
}

/** While it sends: the recipients waiting for their local time or the end of quiet hours. */
export function WaitingNote({ campaign }: { campaign: Campaign }) {
  const waiting = campaign.waiting ?? [];
  if (campaign.status === 'scheduled' && campaign.local_time)
    return (
      <Notice>
        Each recipient gets it at {campaign.local_time} in their own time zone, within the 24 hours after
        sending starts.
      </Notice>
    );
  if (waiting.length === 0) return null;
  const total = waiting.reduce((n, w) => n + w.count, 0);
  return (
    <Notice>
      {formatNumber(total)} {total === 1 ? 'recipient waits' : 'recipients wait'} for their local time:{' '}
      {waiting.map((w) => `${formatNumber(w.count)} at ${formatDateTime(w.at)}`).join(', ')}.
    </Notice>
  );
}
