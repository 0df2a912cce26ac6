import { Liquid } from 'liquidjs';
import mjml2html from 'mjml';
import type { Starter } from '../../src/domain/templates/starters.ts';

/** The contact the starters are rendered for in checks. */
export const SAMPLE_CONTACT = {
  email: 'ada@example.com',
  first_name: 'Ada',
  last_name: 'Lovelace',
  properties: { plan: 'pro' },
};

/** Realistic values for the starters' variables that have no default. */
export const SAMPLE_VALUES: Record<string, string | number | boolean> = {
  account_url: 'https://app.example.com/welcome',
  order_number: 'A-10482',
  order_date: '2026-03-14',
  payment_method: 'Visa ending in 4242',
  item_name: 'Team plan, annual',
  item_amount: '$480.00',
  total: '$528.00',
  receipt_url: 'https://app.example.com/receipts/A-10482',
  // long on purpose: the fallback link must wrap on a phone, not widen the page
  reset_url: 'https://app.example.com/reset-password?token=3f9c2a7be41d8605c1f47e2ab98d0c6359e1a7f4b2d8c0e6',
  issue_date: '2026-03-01',
};

/** The options the template engine gives liquidjs (HTML output is escaped; subject and preheader text are not). */
const OPTIONS = { strictFilters: true, ownPropertyOnly: true } as const;
export const htmlLiquid = new Liquid({ ...OPTIONS, outputEscape: 'escape' });
const textLiquid = new Liquid(OPTIONS);

/** Each variable's default, or its sample value when it has none. */
export function starterValues(starter: Starter): Record<string, string | number | boolean> {
  return Object.fromEntries(
    starter.variables.map((v) => {
      const value = v.default ?? SAMPLE_VALUES[v.name];
      if (value === undefined) throw new Error(`starter ${starter.key}: no sample value for \`${v.name}\``);
      return [v.name, value];
    }),
  );
}

/** Strict MJML compile; the errors MJML reports (strict mode throws them, with the same list). */
export async function compileStrict(
  mjml: string,
): Promise<{ html: string; errors: { formattedMessage: string }[] }> {
  try {
    return await mjml2html(mjml, { validationLevel: 'strict' });
  } catch (err) {
    const errors = (err as { errors?: { formattedMessage: string }[] }).errors;
    if (errors) return { html: '', errors };
    throw err;
  }
}

/**
 * A starter as a recipient gets it: MJML compiled once with the Liquid left inside, then Liquid
 * rendered with the variables and the contact (HTML escaped; subject and preheader are text).
 */
export async function renderStarter(
  starter: Starter,
  values: Record<string, unknown> = starterValues(starter),
  contact: object = SAMPLE_CONTACT,
): Promise<{ subject: string; preheader: string; html: string }> {
  const compiled = await compileStrict(starter.mjml);
  if (compiled.errors.length > 0)
    throw new Error(`starter ${starter.key}: ${compiled.errors.map((e) => e.formattedMessage).join('; ')}`);
  const scope = { ...values, contact };
  return {
    subject: (await textLiquid.parseAndRender(starter.subject, scope)).trim(),
    preheader: await textLiquid.parseAndRender(starter.preheader, scope),
    html: await htmlLiquid.parseAndRender(compiled.html, scope),
  };
}
