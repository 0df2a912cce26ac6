import { type ReactNode, useId } from 'react';

/** A titled card, named by its heading for screen readers (`wide` spans a detail page's columns). */
export function Section({
  title,
  wide,
  className = wide ? 'card wide' : 'card',
  children,
}: {
  title: ReactNode;
  wide?: boolean;
  className?: string;
  children: ReactNode;
}) {
  const id = useId();
  return (
    <section className={className} aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** Terms and their values, as a list of facts. */
export function Facts({ rows, className = 'facts' }: { rows: [string, ReactNode][]; className?: string }) {
  return (
    <dl className={className}>
      {rows.map(([term, value]) => (
        <div key={term} className="fact">
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
