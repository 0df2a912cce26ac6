import { Link } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import { formatNumber } from './format.ts';

/** A column: its heading (also each cell's `data-label`, shown beside the value on a phone) and its cell. */
export interface Column<T> {
  label: string;
  cell(row: T): ReactNode;
  className?: string;
  /** A tooltip for the cell. */
  title?(row: T): string | undefined;
}

/**
 * A table of rows: the first column heads each row (`<th scope="row">`), and on a narrow screen each
 * row becomes a card that names every value (styles.css, `.table`).
 */
export function DataTable<T>({
  caption,
  columns,
  rows,
  rowKey = (row) => String((row as { id?: unknown }).id),
}: {
  /** What the table holds, for screen readers. */
  caption?: string;
  columns: (Column<T> | false)[];
  rows: T[];
  /** Each row's key: its `id` unless said otherwise. */
  rowKey?(row: T): string | number;
}) {
  const shown = columns.filter((c): c is Column<T> => c !== false);
  return (
    <table className="table">
      {caption && <caption className="visually-hidden">{caption}</caption>}
      <thead>
        <tr>
          {shown.map((c) => (
            <th key={c.label} scope="col">
              {c.label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={rowKey(row)}>
            {shown.map((c, i) => {
              const Cell = i === 0 ? 'th' : 'td';
              return (
                <Cell
                  key={c.label}
                  scope={i === 0 ? 'row' : undefined}
                  data-label={c.label}
                  className={c.className}
                  title={c.title?.(row)}
                >
                  {c.cell(row)}
                </Cell>
              );
            })}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export interface PagerProps {
  /** The page shown, from 1. */
  page: number;
  total: number;
  perPage: number;
  /** What the list counts, one and many: ['email', 'emails']. */
  noun: [string, string];
  /** The total is an estimate: say "about", and offer an older page while this one is full. */
  estimated?: boolean;
  full?: boolean;
  /** The way to another page: a button calls `onPage`, or `link` makes the link to it. */
  onPage?(page: number): void;
  link?(page: number, label: string): ReactNode;
}

/** Where a paged list is (how many, which page of how many), with the way to newer and older pages. */
export function Pager({
  page,
  total,
  perPage,
  noun,
  estimated = false,
  full = false,
  onPage,
  link,
}: PagerProps) {
  const pages = Math.max(1, Math.ceil(total / perPage));
  const about = estimated ? 'about ' : '';
  const older = estimated ? full : page < pages;
  const to = (target: number, label: string) =>
    link ? (
      link(target, label)
    ) : (
      <button type="button" className="btn" onClick={() => onPage?.(target)}>
        {label}
      </button>
    );
  return (
    <nav className="pager" aria-label="Pages">
      <p>
        {about}
        {formatNumber(total)} {total === 1 ? noun[0] : noun[1]} · page {page} of {about}
        {formatNumber(pages)}
      </p>
      <div className="actions">
        {page > 1 && to(page - 1, 'Newer')}
        {older && to(page + 1, 'Older')}
      </div>
    </nav>
  );
}

/** The link to another page of a list whose page is in the address (`?page=`, none for the first). */
export function pageLink(page: number, label: string) {
  return (
    <Link
      to="."
      search={(s: Record<string, unknown>) => ({ ...s, page: page > 1 ? page : undefined })}
      className="btn"
    >
      {label}
    </Link>
  );
}

/**
 * A pager's props in one call: the page shown, the total, the page size, what the list counts (one
 * and many), and the way to another page (`link` or `onPage`, with `estimated` and `full` if need be).
 */
export function paging(
  page: number,
  total: number,
  perPage: number,
  noun: [string, string],
  way: Pick<PagerProps, 'onPage' | 'link' | 'estimated' | 'full'>,
): PagerProps {
  return { page, total, perPage, noun, ...way };
}

/** A list's rows with its pager under them. */
export function PagedTable<T>({
  pager,
  ...table
}: Parameters<typeof DataTable<T>>[0] & { pager: PagerProps }) {
  return (
    <>
      <DataTable {...table} />
      <Pager {...pager} />
    </>
  );
}
