import type { DomainDmarc } from '../../api/sending.ts';
import { Bars } from '../../components/Bars.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { formatNumber } from '../../components/format.ts';

/**
 * A domain's DMARC volume and alignment by day, as bars: the messages that passed at the foot of
 * each bar, those that failed on top. A drawing for the eye; the figures are in a table under it.
 */

type Day = DomainDmarc['series'][number];

const percent = (n: number, of: number) => (of === 0 ? '—' : `${((n / of) * 100).toFixed(1)} %`);

export function DmarcChart({ series }: { series: Day[] }) {
  const max = Math.max(1, ...series.map((d) => d.messages));
  const total = series.reduce((n, d) => n + d.messages, 0);
  const aligned = series.reduce((n, d) => n + d.aligned, 0);
  return (
    <figure className="activity">
      <Bars
        label={`Messages reported per day: ${formatNumber(total)} in all, ${percent(aligned, total)} passed DMARC`}
        bars={series.map((d) => ({
          key: d.day,
          parts: [
            { className: 'bar-sent', bottom: 0, height: d.aligned },
            { className: 'bar-bounced', bottom: d.aligned, height: d.messages - d.aligned },
          ],
        }))}
      />
      <figcaption className="muted small">
        <span>{series[0]?.day}</span>
        <span>
          <span className="key key-sent" aria-hidden="true" /> passed DMARC ·{' '}
          <span className="key key-bounced" aria-hidden="true" /> failed, per day; highest bar{' '}
          {formatNumber(max)}
        </span>
        <span>{series[series.length - 1]?.day}</span>
      </figcaption>
      <details>
        <summary>The figures as a table</summary>
        <DataTable
          caption="Messages and alignment by day"
          rows={series.filter((d) => d.messages > 0)}
          rowKey={(d) => d.day}
          columns={[
            { label: 'Day', cell: (d) => d.day },
            { label: 'Messages', cell: (d) => formatNumber(d.messages) },
            { label: 'Passed DMARC', cell: (d) => percent(d.aligned, d.messages) },
            { label: 'Known sources', cell: (d) => formatNumber(d.known_messages) },
            { label: 'Known, passed', cell: (d) => percent(d.known_aligned, d.known_messages) },
          ]}
        />
      </details>
    </figure>
  );
}
