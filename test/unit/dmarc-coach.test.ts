import { BlockList } from 'node:net';
import { describe, expect, it } from 'vitest';
import { type CoachFacts, coach } from '../../src/domain/dmarc/coach.ts';
import { classify, type Known } from '../../src/domain/dmarc/sources.ts';

/**
 * The policy coach and the sources' groups as pure functions (issue 34, item 3): each state of
 * the road to p=reject, and each way a source is known. The same, end to end through the MX, is
 * in test/smtp/dmarc-insight.test.ts.
 */

const facts = (over: Partial<CoachFacts> = {}): CoachFacts => ({
  policy: { p: 'none', adkim: 'r', aspf: 'r' },
  daysObserved: 30,
  daysArrived: 30,
  daysSinceLatest: 1,
  knownMessages: 10_000,
  knownAligned: 9_900,
  unknownSources: 0,
  reportAddress: 'dmarc+abc@in.example',
  domain: 'shop.example',
  ...over,
});

describe('the policy coach', () => {
  it('proposes p=quarantine at exactly 99 % over 30 days, then p=reject, with the record', () => {
    expect(coach(facts())).toMatchObject({
      state: 'propose',
      proposal: {
        p: 'quarantine',
        record: {
          type: 'TXT',
          name: '_dmarc.shop.example',
          value: 'v=DMARC1; p=quarantine; rua=mailto:dmarc+abc@in.example',
        },
      },
    });
    const next = coach(facts({ policy: { p: 'quarantine', adkim: 's', aspf: 'r' } }));
    expect(next.proposal?.record.value).toBe('v=DMARC1; p=reject; rua=mailto:dmarc+abc@in.example; adkim=s');
    expect(next.message).toBe('Your known sources are 99.0 % aligned over 30 days: publish p=reject.');
  });

  it('waits for 30 days under the policy, for 99 %, and for recent reports', () => {
    expect(coach(facts({ daysObserved: 29 }))).toMatchObject({ state: 'observing', proposal: null });
    expect(coach(facts({ daysObserved: 29 })).message).toMatch(/^29 of 30 days of reports under p=none/);
    expect(coach(facts({ knownAligned: 9_899 }))).toMatchObject({ state: 'fix_alignment', proposal: null });
    expect(coach(facts({ knownMessages: 0, knownAligned: 0 }))).toMatchObject({
      state: 'fix_alignment',
      known_aligned_rate: null,
    });
    expect(coach(facts({ daysSinceLatest: 8 }))).toMatchObject({ state: 'stale', proposal: null });
    expect(coach(facts({ policy: null, daysSinceLatest: null, daysObserved: 0 })).state).toBe('no_reports');
    expect(coach(facts({ policy: { p: 'reject', adkim: null, aspf: null } })).state).toBe('at_reject');
  });

  it('counts the days reports arrived over, not only the days they name (issue 47)', () => {
    // 31 back-dated reports sent within seconds: 31 days named, one day of arrivals
    const forged = coach(facts({ daysObserved: 31, daysArrived: 1 }));
    expect(forged).toMatchObject({ state: 'observing', proposal: null, days_observed: 1 });
    expect(forged.message).toMatch(
      /^1 of 30 days of reports under p=none \(they name 31 days but arrived over 1: /,
    );
    expect(coach(facts({ daysObserved: 31, daysArrived: 30 })).state).toBe('propose');
  });

  it('names the unknown sources that the next policy will catch', () => {
    expect(coach(facts({ unknownSources: 1 })).message).toMatch(
      /1 unknown source will have its mail sent to spam: label any that are yours first\.$/,
    );
    expect(
      coach(facts({ policy: { p: 'quarantine', adkim: null, aspf: null }, unknownSources: 3 })).message,
    ).toMatch(/3 unknown sources will have their mail refused/);
  });
});

describe("a source's group", () => {
  const crm = new BlockList();
  crm.addSubnet('203.0.113.0', 24, 'ipv4');
  const v6 = new BlockList();
  v6.addSubnet('2001:db8::', 32, 'ipv6');
  const known: Known = {
    direct: new Map([['192.0.2.1', 'own-ips']]),
    selectors: ['ph1'],
    labels: [
      { id: '1', source: '203.0.113.0/24', label: 'our CRM', created_at: '', block: crm },
      { id: '2', source: '2001:db8::/32', label: 'helpdesk', created_at: '', block: v6 },
    ],
  };
  it.each([
    ['192.0.2.1', false, 'posthorn', 'Posthorn: direct route "own-ips"'],
    ['198.51.100.7', true, 'posthorn', "Posthorn: signed with the domain's DKIM key"],
    ['203.0.113.200', false, 'labelled', 'our CRM'],
    ['2001:db8::25', false, 'labelled', 'helpdesk'],
    ['203.0.114.1', false, 'unknown', null],
  ])('%s (signed by Posthorn: %s) is %s', (ip, signed, kind, name) => {
    expect(classify(known, { source_ip: ip, signed_by_posthorn: signed })).toEqual({ kind, name });
  });
});
