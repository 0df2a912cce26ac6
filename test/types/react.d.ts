/**
 * The one React type the `resend` SDK's declarations name (for its `react` option, which these
 * tests never use). Without it, TypeScript loads @types/react (installed for the dashboard), whose
 * empty DOM interfaces then hide the DOM types Playwright's browser-side callbacks use here.
 */
export type ReactNode = unknown;
