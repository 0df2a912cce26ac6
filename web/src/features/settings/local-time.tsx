import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { api, projectQuery, type Schemas } from '../../api/client.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { CheckboxField, Field } from '../../components/Field.tsx';
import { ActionForm } from '../../components/Form.tsx';
import { Facts, Section } from '../../components/Section.tsx';
import { canManage, useProject } from '../../project.tsx';

/**
 * The project's time zone (for contacts whose timezone property names none) and its quiet hours, in
 * which campaigns and flow sends wait, local to each contact (GET and PATCH of the project's local
 * time settings).
 */

type LocalTime = Schemas['ProjectLocalTime'];

const localTimeQuery = (project: string) =>
  projectQuery(project, ['local-time'], () => api.get('/v1/me/local-time', { project }));

/** Every zone this browser knows, offered while typing (the server checks the name). */
const ZONES: string[] = (Intl as { supportedValuesOf?: (key: string) => string[] }).supportedValuesOf?.(
  'timeZone',
) ?? ['UTC'];

const quietLine = (q: LocalTime['quiet_hours']) =>
  q ? `from ${q.from} to ${q.to}, in each contact's time zone` : 'none';

function LocalTimeForm({ current }: { current: LocalTime }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const zonesId = useId();
  const [zone, setZone] = useState(current.time_zone);
  const [quiet, setQuiet] = useState(current.quiet_hours !== null);
  const [from, setFrom] = useState(current.quiet_hours?.from ?? '21:00');
  const [to, setTo] = useState(current.quiet_hours?.to ?? '08:00');
  const save = useMutation({
    mutationFn: () =>
      api.patch('/v1/me/local-time', {
        project: project.id,
        body: { time_zone: zone.trim(), quiet_hours: quiet ? { from, to } : null },
      }),
    onSuccess: (saved) => queryClient.setQueryData(localTimeQuery(project.id).queryKey, saved),
  });
  return (
    <ActionForm label="Time zone and quiet hours" action={save} submit="Save" pendingLabel="Saving…">
      <Field
        label="Time zone"
        required
        maxLength={64}
        list={zonesId}
        value={zone}
        onChange={(e) => setZone(e.target.value)}
        hint="For contacts whose timezone property names no time zone, such as Europe/Berlin."
      />
      <datalist id={zonesId}>
        {ZONES.map((z) => (
          <option key={z} value={z} />
        ))}
      </datalist>
      <CheckboxField label="Quiet hours" checked={quiet} onChange={setQuiet} />
      {quiet && (
        <div className="inline-form">
          <Field label="From" type="time" required value={from} onChange={(e) => setFrom(e.target.value)} />
          <Field label="Until" type="time" required value={to} onChange={(e) => setTo(e.target.value)} />
        </div>
      )}
      {save.isSuccess && <Notice tone="success">Time zone and quiet hours saved.</Notice>}
    </ActionForm>
  );
}

/** The Settings card: the project's time zone and quiet hours. */
export function LocalTimeCard() {
  const { project } = useProject();
  const current = useQuery(localTimeQuery(project.id));
  const c = current.data;
  return (
    <Section title="Time zone and quiet hours">
      <p className="muted">
        Campaigns sent at a local time and quiet hours read each contact's timezone property, else this time
        zone. In quiet hours campaigns and flows hold their messages until the quiet hours end; transactional
        mail never waits.
      </p>
      <ErrorMessage error={current.error} />
      {c &&
        (canManage(project) ? (
          <LocalTimeForm current={c} />
        ) : (
          <Facts
            rows={[
              ['Time zone', c.time_zone],
              ['Quiet hours', quietLine(c.quiet_hours)],
            ]}
          />
        ))}
    </Section>
  );
}
