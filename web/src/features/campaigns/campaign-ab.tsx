import type { AbTestInput } from '../../api/campaigns.ts';
import { Field, SelectField } from '../../components/Field.tsx';

/**
 * The builder's A/B test: two to eight subject lines (each with an optional sender name), the share
 * of the audience that gets the test, split evenly, and how the winner is picked for the rest.
 */

const MAX_VARIANTS = 8;
const letter = (i: number) => String.fromCharCode(65 + i);

export function AbFields({
  value,
  subject,
  onChange,
}: {
  value: AbTestInput | null;
  subject: string;
  onChange(ab: AbTestInput | null): void;
}) {
  const on = value !== null;
  const ab = value ?? {
    variants: [{ subject }, { subject: '' }],
    test_share: 20,
    winner_by: 'opens' as const,
    wait_minutes: 240,
  };
  const setVariant = (i: number, patch: { subject?: string; from_name?: string }) =>
    onChange({ ...ab, variants: ab.variants.map((v, j) => (j === i ? { ...v, ...patch } : v)) });
  return (
    <fieldset className="choices ab-fields">
      <legend>A/B test</legend>
      <label>
        <input type="checkbox" checked={on} onChange={(e) => onChange(e.target.checked ? ab : null)} />
        Test subject lines on part of the audience first
      </label>
      {on && (
        <>
          {ab.variants.map((v, i) => (
            <div className="ab-variant" key={letter(i)}>
              <Field
                label={`Variant ${letter(i)} subject`}
                value={v.subject ?? ''}
                onChange={(e) => setVariant(i, { subject: e.target.value })}
              />
              <Field
                label={`Variant ${letter(i)} sender name (optional)`}
                value={v.from_name ?? ''}
                onChange={(e) => setVariant(i, { from_name: e.target.value || undefined })}
              />
              {ab.variants.length > 2 && (
                <button
                  type="button"
                  className="btn link"
                  onClick={() => onChange({ ...ab, variants: ab.variants.filter((_, j) => j !== i) })}
                >
                  Remove variant {letter(i)}
                </button>
              )}
            </div>
          ))}
          {ab.variants.length < MAX_VARIANTS && (
            <button
              type="button"
              className="btn"
              onClick={() => onChange({ ...ab, variants: [...ab.variants, { subject: '' }] })}
            >
              Add a variant
            </button>
          )}
          <Field
            label="Test share (% of the audience)"
            type="number"
            min={1}
            max={100}
            hint="Split evenly among the variants; at 100 every recipient is in the test and no winner is sent."
            value={ab.test_share}
            onChange={(e) => onChange({ ...ab, test_share: Number(e.target.value) })}
          />
          <SelectField
            label="Pick the winner by"
            value={ab.winner_by}
            onChange={(winner_by) => onChange({ ...ab, winner_by })}
            options={[
              { value: 'opens', label: 'people who opened' },
              { value: 'clicks', label: 'people who clicked' },
              { value: 'revenue', label: 'revenue per recipient' },
              { value: 'manual', label: 'my choice, on the campaign page' },
            ]}
          />
          {ab.winner_by !== 'manual' && (
            <Field
              label="Wait before picking (minutes)"
              type="number"
              min={1}
              max={10_080}
              value={ab.wait_minutes ?? 240}
              onChange={(e) => onChange({ ...ab, wait_minutes: Number(e.target.value) })}
            />
          )}
        </>
      )}
    </fieldset>
  );
}
