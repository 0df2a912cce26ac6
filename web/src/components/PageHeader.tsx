import { type ReactNode, useEffect, useRef } from 'react';
import { useFocusOnNavigation } from './focus.ts';

/** A page's title: the document's too, and focused after each navigation inside the app. */
export function PageTitle({ title }: { title: string }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnNavigation(heading);
  useEffect(() => {
    document.title = `${title} · Posthorn`;
  }, [title]);
  return (
    <h1 tabIndex={-1} ref={heading}>
      {title}
    </h1>
  );
}

/** The screen's title, with what can be done on the screen beside it. */
export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="page-header">
      <PageTitle title={title} />
      {children && <div className="page-actions">{children}</div>}
    </div>
  );
}
