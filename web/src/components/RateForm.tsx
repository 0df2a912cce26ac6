import { type FormEvent, useState } from 'react';
import type { SendingRate } from '../api/sending.ts';
import { ErrorMessage, Notice } from './Alert.tsx';
import { Field } from './Field.tsx';
import { formatNumber } from './format.ts';

/** The sending rate of a project or a domain in words. */
export const rateLine = (r: SendingRate) =>
  `${r.per_second == null ? 'No limit per second' : `${formatNumber(r.per_second)} per second`}; ${
    r.per_hour == null ? 'no limit per hour' : `${formatNumber(r.per_hour)} per hour`
  }.`;

const rateText = (n: number | null | undefined) => (n == null ? '' : String(n));
const rateValue = (text: string) => (text.trim() === '' ? null : Number(text));

/** How a save is going: the mutation that `onSave` starts. */
interface Saving {
  isPending: boolean;
  isSuccess: boolean;
  error: unknown;
}

/** Messages per second and per hour (blank for no limit), saved by `onSave`: a project's or a domain's. */
export function RateForm({
  rate,
  label,
  saving,
  onSave,
}: {
  rate: SendingRate;
  label: string;
  saving: Saving;
  onSave(rate: SendingRate): void;
}) {
  const [perSecond, setPerSecond] = useState(rateText(rate.per_second));
  const [perHour, setPerHour] = useState(rateText(rate.per_hour));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSave({ per_second: rateValue(perSecond), per_hour: rateValue(perHour) });
  };
  return (
    <form onSubmit={submit} aria-label={label}>
      {(
        [
          ['Messages per second', 100_000, perSecond, setPerSecond],
          ['Messages per hour', 360_000_000, perHour, setPerHour],
        ] as const
      ).map(([label, max, value, set]) => (
        <Field
          key={label}
          label={label}
          type="number"
          min={1}
          max={max}
          placeholder="no limit"
          hint="Blank for no limit."
          value={value}
          onChange={(e) => set(e.target.value)}
        />
      ))}
      {saving.isSuccess && <Notice tone="success">Sending rate saved.</Notice>}
      <ErrorMessage error={saving.error} />
      <button type="submit" className="btn primary" disabled={saving.isPending}>
        {saving.isPending ? 'Saving…' : 'Save rate'}
      </button>
    </form>
  );
}
