import { type ReactNode, useEffect, useRef } from 'react';
import { useFocusOnNavigation } from '../../components/focus.ts';

/** The frame of the pages a signed-out person sees: sign-in, password reset, invitations. */
export function PublicPage({ title, children }: { title: string; children: ReactNode }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnNavigation(heading);
  useEffect(() => {
    document.title = `${title} · Posthorn`;
  }, [title]);
  return (
    <div className="public">
      <header className="public-brand">
        <img className="brand-mark" src="./favicon.svg" alt="" width="24" height="24" /> Posthorn
      </header>
      <main id="main" className="public-card">
        <h1 tabIndex={-1} ref={heading}>
          {title}
        </h1>
        {children}
      </main>
    </div>
  );
}
