import type { ReactNode } from 'react';
import { ErrorMessage } from './Alert.tsx';

/** What Loaded reads of a query (TanStack Query's result). */
interface QueryState<T> {
  data: T | undefined;
  error: unknown;
  isPending: boolean;
}

/**
 * A query's answer as a screen shows it: the error if it failed, `loading` (announced) until it
 * answers, `empty` when `isEmpty` says there is nothing to list, else what `children` makes of it.
 */
export function Loaded<T>({
  query,
  loading = 'Loading…',
  isEmpty,
  empty,
  children,
}: {
  query: QueryState<T>;
  loading?: string;
  isEmpty?(data: T): boolean;
  empty?: ReactNode;
  children(data: T): ReactNode;
}) {
  const { data } = query;
  return (
    <>
      <ErrorMessage error={query.error} />
      {query.isPending ? (
        <p role="status">{loading}</p>
      ) : data === undefined ? null : isEmpty?.(data) ? (
        empty
      ) : (
        children(data)
      )}
    </>
  );
}
