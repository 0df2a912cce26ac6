import type { ReactNode } from 'react';
import { PageTitle } from '../../components/PageHeader.tsx';

/** The frame of the pages a signed-out person sees: sign-in, password reset, invitations. */
export function PublicPage({ title, children }: { title: string; children: ReactNode }) {
  return (
    <div className="public">
      <header className="public-brand">
        <img className="brand-mark" src="./favicon.svg" alt="" width="24" height="24" /> Posthorn
      </header>
      <main id="main" className="public-card">
        <PageTitle title={title} />
        {children}
      </main>
    </div>
  );
}
