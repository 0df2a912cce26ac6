import type { TemplateVariable } from '../../db/schema.ts';

/**
 * A built-in template a project can copy: MJML with Liquid inside text and attribute values. Every
 * variable has a default, so a starter goes to a campaign or a flow message without an edit.
 */
export interface Starter {
  key: string;
  name: string;
  description: string;
  subject: string;
  preheader: string;
  mjml: string;
  variables: TemplateVariable[];
}

// Roboto, Lato, Open Sans and Ubuntu are left out on purpose: MJML would link them from Google Fonts.
const FONT_STACK = "-apple-system, BlinkMacSystemFont, 'Segoe UI', Helvetica, Arial, sans-serif";

/** Shared look: 600 px, one type scale, dark text on white (contrast above 12:1), one accent colour. */
const HEAD = `<mj-head>
    <mj-attributes>
      <mj-all font-family="${FONT_STACK}" />
      <mj-section padding="0 12px" />
      <mj-text font-size="16px" line-height="1.6" color="#1f2937" padding="0 0 16px 0" />
      <mj-button background-color="#1d4ed8" color="#ffffff" font-size="16px" font-weight="600" border-radius="6px" inner-padding="12px 28px" padding="8px 0 24px 0" align="left" />
      <mj-table font-size="15px" line-height="1.5" color="#1f2937" padding="0 0 16px 0" />
      <mj-divider border-width="1px" border-color="#e5e7eb" padding="8px 0 24px 0" />
      <mj-class name="heading" font-size="26px" line-height="1.3" font-weight="700" color="#111827" />
      <mj-class name="subheading" font-size="19px" line-height="1.35" font-weight="700" color="#111827" padding="0 0 8px 0" />
      <mj-class name="muted" font-size="13px" line-height="1.5" color="#4b5563" />
    </mj-attributes>
    <mj-style>a { color: #1d4ed8; }</mj-style>
  </mj-head>`;

/** The brand line: the logo when one is given, else the company name as a word mark. */
const HEADER = `<mj-section padding="32px 32px 16px 32px">
      <mj-column>
        <mj-text font-size="20px" font-weight="700" color="#111827" padding="0">{% if logo_url != "" %}<img src="{{ logo_url }}" alt="{{ company_name }}" height="32" style="display:block;height:32px;width:auto;border:0;" />{% else %}{{ company_name }}{% endif %}</mj-text>
      </mj-column>
    </mj-section>`;

/** Why the reader gets this mail, and who sent it (with the postal address when there is one). */
function footer(reason: string): string {
  return `<mj-section padding="24px 24px 40px 24px">
      <mj-column>
        <mj-text mj-class="muted" align="center" padding="0">${reason}<br />{{ company_name }}{% if company_address != "" %} · {{ company_address }}{% endif %}</mj-text>
      </mj-column>
    </mj-section>`;
}

/** A whole starter: the brand line, the content's sections on a white card, the footer. */
function document(body: string, reason: string): string {
  return `<mjml>
  ${HEAD}
  <mj-body background-color="#f3f4f6" width="600px">
    ${HEADER}
    <mj-wrapper background-color="#ffffff" border-radius="8px" padding="40px 20px 24px 20px">
    ${body}
    </mj-wrapper>
    ${footer(reason)}
  </mj-body>
</mjml>
`;
}

const BRAND_VARIABLES: TemplateVariable[] = [
  { name: 'company_name', type: 'string', default: 'Acme' },
  { name: 'logo_url', type: 'string', default: '' },
  { name: 'company_address', type: 'string', default: '' },
];

const FIRST_NAME = '{{ contact.first_name | default: "there" }}';

const welcome: Starter = {
  key: 'welcome',
  name: 'Welcome',
  description: 'Greets a new sign-up, gives three first steps and one button into the product.',
  subject: '{{ contact.first_name | default: "Hi there" }}, welcome to {{ company_name }}',
  preheader: 'Your account is ready. Here are three first steps to get going.',
  variables: [
    ...BRAND_VARIABLES,
    { name: 'account_url', type: 'string', default: 'https://example.com/account' },
    { name: 'guide_url', type: 'string', default: 'https://example.com/docs/getting-started' },
  ],
  mjml: document(
    `<mj-section>
      <mj-column>
        <mj-text mj-class="heading">Welcome aboard</mj-text>
        <mj-text>Hi ${FIRST_NAME}, thanks for signing up for {{ company_name }}. Your account is ready, and these three steps will help you settle in:</mj-text>
        <mj-text><ol style="margin:0;padding-left:22px;">
          <li style="margin-bottom:8px;"><strong>Complete your profile</strong> so your teammates know who you are.</li>
          <li style="margin-bottom:8px;"><strong>Invite your team</strong> and work together from day one.</li>
          <li>Read the <a href="{{ guide_url }}">getting-started guide</a>; it takes about five minutes.</li>
        </ol></mj-text>
        <mj-button href="{{ account_url }}">Open your account</mj-button>
        <mj-text>Questions or feedback? Reply to this email; a person on our team reads every message.</mj-text>
        <mj-text padding="0">Best regards,<br />The {{ company_name }} team</mj-text>
      </mj-column>
    </mj-section>`,
    'You received this email because an account was created with {{ contact.email }}.',
  ),
};

const receipt: Starter = {
  key: 'receipt',
  name: 'Receipt',
  description: 'Confirms a payment: order number, date, payment method, the line, tax and total.',
  subject: 'Your {{ company_name }} receipt for order {{ order_number }}',
  preheader: 'Thank you for your order. We received your payment of {{ total }}.',
  variables: [
    ...BRAND_VARIABLES,
    { name: 'order_number', type: 'string', default: '1001' },
    // an ISO date, or empty to leave the row out
    { name: 'order_date', type: 'string', default: '' },
    { name: 'payment_method', type: 'string', default: 'Card' },
    { name: 'item_name', type: 'string', default: 'Team plan, monthly' },
    { name: 'item_quantity', type: 'number', default: 1 },
    { name: 'item_amount', type: 'string', default: '$40.00' },
    { name: 'tax_amount', type: 'string', default: '' },
    { name: 'total', type: 'string', default: '$40.00' },
    { name: 'receipt_url', type: 'string', default: 'https://example.com/account/receipts' },
  ],
  mjml: document(
    `<mj-section>
      <mj-column>
        <mj-text mj-class="heading">Thank you for your order</mj-text>
        <mj-text>Hi ${FIRST_NAME}, we received your payment. Here is your receipt for order {{ order_number }}.</mj-text>
        <mj-table>
          <tr><td style="padding:4px 0;color:#4b5563;">Order number</td> <td style="padding:4px 0;text-align:right;">{{ order_number }}</td></tr>
          {% if order_date != "" %}<tr><td style="padding:4px 0;color:#4b5563;">Date</td> <td style="padding:4px 0;text-align:right;">{{ order_date | date: "%B %-d, %Y" }}</td></tr>{% endif %}
          <tr><td style="padding:4px 0;color:#4b5563;">Paid with</td> <td style="padding:4px 0;text-align:right;">{{ payment_method }}</td></tr>
        </mj-table>
        <mj-divider />
        <mj-table>
          <tr><td style="padding:4px 0;">{{ item_name }}{% if item_quantity != 1 %} × {{ item_quantity }}{% endif %}</td> <td style="padding:4px 0;text-align:right;white-space:nowrap;">{{ item_amount }}</td></tr>
          {% if tax_amount != "" %}<tr><td style="padding:4px 0;color:#4b5563;">Tax</td> <td style="padding:4px 0;text-align:right;white-space:nowrap;">{{ tax_amount }}</td></tr>{% endif %}
          <tr><td style="padding:12px 0 4px 0;border-top:1px solid #e5e7eb;font-weight:700;">Total paid</td> <td style="padding:12px 0 4px 0;border-top:1px solid #e5e7eb;text-align:right;font-weight:700;white-space:nowrap;">{{ total }}</td></tr>
        </mj-table>
        <mj-button href="{{ receipt_url }}">View your receipt</mj-button>
        <mj-text>Keep this email for your records. If anything about this charge looks wrong, reply to this email and we will sort it out.</mj-text>
        <mj-text padding="0">Thank you,<br />The {{ company_name }} team</mj-text>
      </mj-column>
    </mj-section>`,
    'You received this receipt because you placed an order with {{ company_name }} as {{ contact.email }}.',
  ),
};

const passwordReset: Starter = {
  key: 'password_reset',
  name: 'Password reset',
  description:
    'Sends a one-time link to choose a new password, says when it expires and what to do if unexpected.',
  subject: 'Reset your {{ company_name }} password',
  preheader: 'Use the link inside within {{ expires_in_minutes }} minutes to choose a new password.',
  variables: [
    ...BRAND_VARIABLES,
    { name: 'reset_url', type: 'string', default: 'https://example.com/reset-password' },
    { name: 'expires_in_minutes', type: 'number', default: 60 },
  ],
  mjml: document(
    `<mj-section>
      <mj-column>
        <mj-text mj-class="heading">Reset your password</mj-text>
        <mj-text>Hi ${FIRST_NAME}, someone asked to reset the password of the {{ company_name }} account for {{ contact.email }}. To choose a new one, use the button below.</mj-text>
        <mj-button href="{{ reset_url }}">Choose a new password</mj-button>
        <mj-text>This link works once and expires in {{ expires_in_minutes }} minutes.</mj-text>
        <mj-text>If you did not ask for this, you can ignore this email: your password stays the same and nobody can change it without this link.</mj-text>
        <mj-divider />
        <mj-text mj-class="muted">If the button does not work, copy this address into your browser:<br /><a href="{{ reset_url }}">{{ reset_url }}</a></mj-text>
      </mj-column>
    </mj-section>`,
    'You received this email because a password reset was requested for {{ contact.email }}.',
  ),
};

/** One article: a title, a short summary, and a link to the full piece. */
function article(n: number, size: 'heading' | 'subheading'): string {
  return `<mj-text mj-class="${size}">{{ article_${n}_title }}</mj-text>
        <mj-text>{{ article_${n}_summary }}</mj-text>
        <mj-text><a href="{{ article_${n}_url }}" style="font-weight:600;">Read the full article</a></mj-text>`;
}

function articleVariables(n: number, title: string, summary: string, slug: string): TemplateVariable[] {
  return [
    { name: `article_${n}_title`, type: 'string', default: title },
    { name: `article_${n}_summary`, type: 'string', default: summary },
    { name: `article_${n}_url`, type: 'string', default: `https://example.com/blog/${slug}` },
  ];
}

const newsletter: Starter = {
  key: 'newsletter',
  name: 'Newsletter',
  description:
    'A monthly issue: an introduction, one featured article and two more side by side (stacked on phones).',
  subject: '{{ issue_title }}: {{ article_1_title }}',
  preheader: 'In this issue: {{ article_1_title }}; {{ article_2_title }}; {{ article_3_title }}.',
  variables: [
    ...BRAND_VARIABLES,
    { name: 'issue_title', type: 'string', default: 'The monthly update' },
    // an ISO date, or empty to show the title alone
    { name: 'issue_date', type: 'string', default: '' },
    {
      name: 'intro',
      type: 'string',
      default: 'Here is what our team shipped this month, and a few ideas from customers worth sharing.',
    },
    ...articleVariables(
      1,
      'Faster reports for every team',
      'Reports now load in under a second, even across a full year of data. We rebuilt how they are computed and stored; here is what changed and why.',
      'faster-reports',
    ),
    ...articleVariables(
      2,
      'A guide to shared workspaces',
      'How three teams organise projects, permissions and reviews in one place.',
      'shared-workspaces',
    ),
    ...articleVariables(
      3,
      'What customers asked us',
      'The most common questions from our support inbox, answered in one page.',
      'customer-questions',
    ),
  ],
  mjml: document(
    `<mj-section>
      <mj-column>
        <mj-text mj-class="muted" padding="0 0 8px 0">{{ issue_title }}{% if issue_date != "" %} · {{ issue_date | date: "%B %Y" }}{% endif %}</mj-text>
        <mj-text>Hi ${FIRST_NAME},</mj-text>
        <mj-text>{{ intro }}</mj-text>
        <mj-divider />
        ${article(1, 'heading')}
        <mj-divider />
      </mj-column>
    </mj-section>
    <mj-section padding="0">
      <mj-column padding="0 12px">
        ${article(2, 'subheading')}
      </mj-column>
      <mj-column padding="0 12px">
        ${article(3, 'subheading')}
      </mj-column>
    </mj-section>
    <mj-section>
      <mj-column>
        <mj-divider />
        <mj-text padding="0">Thanks for reading,<br />The {{ company_name }} team</mj-text>
      </mj-column>
    </mj-section>`,
    'You received this email because {{ contact.email }} subscribed to news from {{ company_name }}.',
  ),
};

/** The built-in starters (`POST /templates` with `starter` copies one; each compiles with strict MJML). */
export const STARTERS: Starter[] = [welcome, receipt, passwordReset, newsletter];
