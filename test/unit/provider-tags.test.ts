import { describe, expect, it } from 'vitest';
import { type ProviderTags, sesEmailTags, tagHeaders, tagPairs } from '../../src/delivery/routes/tags.ts';
import { providerTagsOf } from '../../src/domain/sending/hand-over.ts';

const campaignMail: ProviderTags = {
  email: '0b4f2c55-6a53-4c43-9d36-0e1b8a4f1d10',
  project: '5d0e3a38-1f49-4a52-9d7e-2f0f8d5f3e21',
  stream: 'marketing',
  campaign: '9e1c2b7a-3a7d-4c1e-8f0b-4b1c2d3e4f50',
  variation: 'Subject B (short)',
};
const flowMail: ProviderTags = {
  email: 'e2',
  project: 'p1',
  stream: 'automation',
  flow: 'f1',
  step: 'welcome-1',
};

/** The header lines as [name, value] pairs. */
const headersOf = (block: string) =>
  block
    .split('\r\n')
    .filter(Boolean)
    .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]);

describe('provider tags', () => {
  it('carry the project, stream, email and the campaign with its variation, in a fixed order', () => {
    expect(tagPairs(campaignMail)).toEqual([
      ['posthorn_email', campaignMail.email],
      ['posthorn_project', campaignMail.project],
      ['posthorn_stream', 'marketing'],
      ['posthorn_campaign', campaignMail.campaign],
      // what a provider refuses in a value (spaces, parentheses) becomes "_"
      ['posthorn_variation', 'Subject_B__short_'],
    ]);
    expect(tagPairs(flowMail).map(([n]) => n)).toEqual([
      'posthorn_email',
      'posthorn_project',
      'posthorn_stream',
      'posthorn_flow',
      'posthorn_step',
    ]);
    // the service's own mail has no project
    expect(tagPairs({ email: 'e3', project: null, stream: 'transactional' })).toEqual([
      ['posthorn_email', 'e3'],
      ['posthorn_stream', 'transactional'],
    ]);
  });

  it('are written as each relay dialect expects', () => {
    expect(headersOf(tagHeaders('ses', flowMail, { configurationSet: 'posthorn' }))).toEqual([
      [
        'X-SES-MESSAGE-TAGS',
        'posthorn_email=e2, posthorn_project=p1, posthorn_stream=automation, posthorn_flow=f1, posthorn_step=welcome-1',
      ],
      ['X-SES-CONFIGURATION-SET', 'posthorn'],
    ]);
    const mailgun = headersOf(tagHeaders('mailgun', campaignMail));
    expect(mailgun.slice(0, 2)).toEqual([
      ['X-Mailgun-Tag', 'marketing'],
      ['X-Mailgun-Tag', `campaign-${campaignMail.campaign}`],
    ]);
    expect(mailgun[2][0]).toBe('X-Mailgun-Variables');
    expect(JSON.parse(mailgun[2][1])).toEqual(Object.fromEntries(tagPairs(campaignMail)));
    expect(headersOf(tagHeaders('postmark', flowMail))).toEqual([
      ['X-PM-Tag', 'flow-f1'],
      ['X-PM-Metadata-email', 'e2'],
      ['X-PM-Metadata-project', 'p1'],
      ['X-PM-Metadata-stream', 'automation'],
      ['X-PM-Metadata-flow', 'f1'],
      ['X-PM-Metadata-step', 'welcome-1'],
    ]);
    const [[name, value]] = headersOf(tagHeaders('sendgrid', campaignMail));
    expect(name).toBe('X-SMTPAPI');
    expect(JSON.parse(value)).toEqual({
      category: ['marketing', `campaign-${campaignMail.campaign}`],
      unique_args: Object.fromEntries(tagPairs(campaignMail)),
    });
    expect(tagHeaders('none', campaignMail)).toBe('');
  });

  it('stay within each provider limit, on one header line of printable ASCII', () => {
    const long: ProviderTags = { ...campaignMail, variation: `é${'x'.repeat(400)}\r\nBcc: evil@example.org` };
    for (const dialect of ['ses', 'mailgun', 'postmark', 'sendgrid'] as const) {
      const block = tagHeaders(dialect, long);
      expect(block).toMatch(/^([A-Za-z0-9-]+: [\x20-\x7e]+\r\n)+$/);
      for (const line of block.split('\r\n')) expect(line.length).toBeLessThan(998);
      expect(block).not.toContain('Bcc:');
    }
    for (const { Name, Value } of sesEmailTags(long)) {
      expect(Name).toMatch(/^[A-Za-z0-9_-]{1,256}$/);
      expect(Value).toMatch(/^[A-Za-z0-9_-]{1,256}$/);
    }
    const postmark = headersOf(tagHeaders('postmark', long));
    for (const [name, value] of postmark.slice(1)) {
      expect(name.slice('X-PM-Metadata-'.length).length).toBeLessThanOrEqual(20);
      expect(value.length).toBeLessThanOrEqual(80);
    }
  });

  it("are read from an email's row: the variation from its tags, only for a campaign's message", () => {
    const row = {
      id: 'e1',
      project_id: 'p1',
      stream: 'marketing' as const,
      campaign_id: 'c1',
      flow_id: null,
      flow_step: null,
      tags: [
        { name: 'team', value: 'growth' },
        { name: 'variation', value: 'B' },
      ],
    };
    expect(providerTagsOf(row)).toEqual({
      email: 'e1',
      project: 'p1',
      stream: 'marketing',
      campaign: 'c1',
      variation: 'B',
      flow: null,
      step: null,
    });
    // a user's own tag named "variation" on an API email is not an A/B variation
    expect(providerTagsOf({ ...row, stream: 'transactional', campaign_id: null }).variation).toBeNull();
  });
});
