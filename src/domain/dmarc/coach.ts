/**
 * The policy coach (issue 34): the road from `p=none` to `p=reject`, one step at a time. When the
 * reports of 30 days under the published policy show the domain's known sources (Posthorn's own
 * and those a person labelled) at least 99 % aligned, it proposes the next policy with the exact
 * record to publish; otherwise it says what it is waiting for. The 30 days are counted by the
 * reports' date ranges and by their arrivals, the fewer of the two (issue 47), and only reports
 * whose mail was authenticated count. Pure: the facts come from overview.ts.
 */

export const COACH_DAYS = 30;
export const COACH_ALIGNED = 0.99;
/** Reports older than this (from the service's today) no longer say how the domain's mail fares. */
const RECENT_DAYS = 7;

export interface CoachFacts {
  /** The policy the latest aggregate report saw published (`none`, `quarantine`, `reject`), or null. */
  policy: { p: string | null; adkim: string | null; aspf: string | null } | null;
  /** Days of reports under that policy, up to the latest report (0 with none), by their date ranges. */
  daysObserved: number;
  /**
   * Days over which those reports arrived (the first arrival's day counted): back-dated reports
   * sent within minutes name many days but arrive in one, and observe one.
   */
  daysArrived: number;
  /** Days from the latest report to the service's today. */
  daysSinceLatest: number | null;
  /** The last 30 days' messages from known sources, and of them those aligned. */
  knownMessages: number;
  knownAligned: number;
  /** Unknown sources in those days (a person may label some before the next step). */
  unknownSources: number;
  /** Where the domain's aggregate reports go (the `rua` Posthorn gives it). */
  reportAddress: string;
  domain: string;
}

export interface CoachAdvice {
  state: 'no_reports' | 'stale' | 'observing' | 'fix_alignment' | 'propose' | 'at_reject';
  message: string;
  /** The policy proposed, with the exact record; null unless `state` is `propose`. */
  proposal: { p: 'quarantine' | 'reject'; record: { type: 'TXT'; name: string; value: string } } | null;
  known_aligned_rate: number | null;
  days_observed: number;
}

const NEXT: Record<string, 'quarantine' | 'reject' | undefined> = {
  none: 'quarantine',
  quarantine: 'reject',
};

const rate = (facts: CoachFacts) =>
  facts.knownMessages === 0 ? null : facts.knownAligned / facts.knownMessages;

const pct = (r: number) => `${(Math.floor(r * 1000) / 10).toFixed(1)} %`;

/** The record that publishes `p`, keeping the strict alignment modes the domain already asks for. */
export function dmarcRecord(facts: CoachFacts, p: string) {
  const strict = [
    facts.policy?.adkim === 's' ? 'adkim=s' : null,
    facts.policy?.aspf === 's' ? 'aspf=s' : null,
  ].filter(Boolean);
  const value = [`v=DMARC1`, `p=${p}`, `rua=mailto:${facts.reportAddress}`, ...strict].join('; ');
  return { type: 'TXT' as const, name: `_dmarc.${facts.domain}`, value };
}

export function coach(facts: CoachFacts): CoachAdvice {
  const known = rate(facts);
  const observed = Math.min(facts.daysObserved, facts.daysArrived);
  const advice = (
    state: CoachAdvice['state'],
    message: string,
    proposal: CoachAdvice['proposal'] = null,
  ) => ({
    state,
    message,
    proposal,
    known_aligned_rate: known,
    days_observed: observed,
  });
  const p = facts.policy?.p?.toLowerCase() ?? null;
  if (!facts.policy || facts.daysSinceLatest === null)
    return advice(
      'no_reports',
      'No aggregate report yet: publish the DMARC record shown for the domain, with its rua.',
    );
  if (p === 'reject')
    return advice(
      'at_reject',
      'The domain publishes p=reject: receivers refuse mail that fails DMARC. Nothing further to do.',
    );
  if (facts.daysSinceLatest > RECENT_DAYS)
    return advice(
      'stale',
      `The latest report is ${facts.daysSinceLatest} days old: check that the DMARC record and its rua are still published.`,
    );
  const next = NEXT[p ?? 'none'] ?? 'quarantine';
  if (observed < COACH_DAYS) {
    const arrivals =
      facts.daysArrived < facts.daysObserved
        ? ` (they name ${facts.daysObserved} days but arrived over ${facts.daysArrived}: days are counted as they pass)`
        : '';
    return advice(
      'observing',
      `${observed} of ${COACH_DAYS} days of reports under p=${p ?? 'none'}${arrivals}: the coach proposes p=${next} once ${COACH_DAYS} days show your known sources at least ${pct(COACH_ALIGNED)} aligned.`,
    );
  }
  if (known === null || known < COACH_ALIGNED)
    return advice(
      'fix_alignment',
      known === null
        ? `No mail from a known source in the last ${COACH_DAYS} days: label the sources that are yours, or send through Posthorn.`
        : `Your known sources are ${pct(known)} aligned over ${COACH_DAYS} days (at least ${pct(COACH_ALIGNED)} is needed for p=${next}): see which of them fail DKIM or SPF.`,
    );
  const unknown =
    facts.unknownSources > 0
      ? ` ${facts.unknownSources === 1 ? '1 unknown source' : `${facts.unknownSources} unknown sources`} will have ${facts.unknownSources === 1 ? 'its' : 'their'} mail ${next === 'reject' ? 'refused' : 'sent to spam'}: label any that are yours first.`
      : '';
  return advice(
    'propose',
    `Your known sources are ${pct(known)} aligned over ${COACH_DAYS} days: publish p=${next}.${unknown}`,
    { p: next, record: dmarcRecord(facts, next) },
  );
}
