import type { DomainDmarc } from '../../api/sending.ts';
import { DataTable } from '../../components/DataTable.tsx';
import { formatNumber } from '../../components/format.ts';

/**
 * A domain's DMARC volume and alignment by day, as bars: the messages that passed at the foot of
 * each bar, those that failed on top. A drawing for the eye; the figures are in a table under it.
 */

const HEIGHT = 120;
type Day = DomainDmarc['series'][number];

const percent = (n: number, of: number) => (of === 0 ? '—' : `${((n / of) * 100).toFixed(1)} %`);

export function DmarcChart({ series }: { series: Day[] }) {
  const max = Math.max(1, ...series.map((d) => d.messages));
  const width = Math.max(series.length * 12, 120);
  const total = series.reduce((n, d) => n + d.messages, 0);
  const aligned = series.reduce((n, d) => n + d.aligned, 0);
  return (
    <figure className="activity">
      <svg
        viewBox={`0 0 ${width} ${HEIGHT}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`Messages reported per day: ${formatNumber(total)} in all, ${percent(aligned, total)} passed DMARC`}
      >
        {series.map((d, i) => {
          const x = (i * width) / series.length;
          const w = Math.max(width / series.length - 2, 1);
          const h = (n: number) => (n / max) * (HEIGHT - 4);
          return (
            <g key={d.day}>
              <rect className="bar-sent" x={x} y={HEIGHT - h(d.aligned)} width={w} height={h(d.aligned)} />
              <rect
                className="bar-bounced"
                x={x}
                y={HEIGHT - h(d.messages)}
                width={w}
                height={h(d.messages - d.aligned)}
              />
            </g>
          );
        })}
      </svg>
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
