/**
 * Bars by time, as an SVG drawn for the eye (the figures are in a table beside it): each bar is
 * stacked from its parts, each part from `bottom` to `bottom + height` in the chart's units, the
 * tallest bar reaching the top. Styled by `.activity` (styles.css).
 */

const HEIGHT = 120;

export interface Bar {
  key: string;
  parts: { className: string; bottom: number; height: number }[];
}

export function Bars({ bars, label }: { bars: Bar[]; label: string }) {
  const max = Math.max(1, ...bars.flatMap((b) => b.parts.map((p) => p.bottom + p.height)));
  const width = Math.max(bars.length * 12, 120);
  const scale = (n: number) => (n / max) * (HEIGHT - 4);
  return (
    <svg viewBox={`0 0 ${width} ${HEIGHT}`} preserveAspectRatio="none" role="img" aria-label={label}>
      {bars.map((b, i) => {
        const x = (i * width) / bars.length;
        const w = Math.max(width / bars.length - 2, 1);
        return (
          <g key={b.key}>
            {b.parts.map((p) => (
              <rect
                key={p.className}
                className={p.className}
                x={x}
                y={HEIGHT - scale(p.bottom + p.height)}
                width={w}
                height={scale(p.height)}
              />
            ))}
          </g>
        );
      })}
    </svg>
  );
}
