import { type ReactNode, useEffect, useRef } from 'react';
import { useFocusOnNavigation } from './focus.ts';

/** The screen's title, also the document's; focused after each navigation inside the app. */
export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnNavigation(heading);
  useEffect(() => {
    document.title = `${title} · Posthorn`;
  }, [title]);
  return (
    <div className="page-header">
      <h1 tabIndex={-1} ref={heading}>
        {title}
      </h1>
      {children && <div className="page-actions">{children}</div>}
    </div>
  );
}
