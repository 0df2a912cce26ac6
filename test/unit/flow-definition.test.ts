import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/domain/core/errors.ts';
import { type FlowDefinition, parseDefinition, stepById } from '../../src/domain/flows/definition.ts';

const LIST = '0b8f9d7e-3c1a-4e2b-9f00-123456789abc';
const send = { type: 'send', subject: 'Hi', html: '<p>Hi</p>' };

/** The message of the 400 a definition gets (fails the test when it is accepted). */
function refusal(input: unknown): string {
  try {
    parseDefinition(input);
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(input)}`);
}

describe('parseDefinition', () => {
  it("normalises the spec's own shape: ids, edges, defaults, flow-level sender", () => {
    const def = parseDefinition({ trigger: { type: 'contact_created' }, steps: [send], from_name: 'Acme' });
    expect(def).toEqual({
      trigger: { type: 'contact_created' },
      reentry: { policy: 'once' },
      goal: null,
      steps: [
        {
          id: 'step_1',
          type: 'send',
          subject: 'Hi',
          html: '<p>Hi</p>',
          template_id: null,
          template_version: null,
          from: null,
          from_name: 'Acme',
          next: null,
        },
      ],
    });
  });

  it('links each step to the following one unless told, and keeps an explicit null end', () => {
    const def = parseDefinition({
      trigger: { type: 'manual' },
      from: 'Shop <news@shop.example>',
      steps: [
        { ...send, id: 'welcome' },
        { type: 'wait', duration_seconds: 2 },
        {
          type: 'branch',
          branches: [
            { condition: { all: [{ field: 'properties.vip', op: 'equals', value: true }] }, next: 'vip' },
          ],
        },
        { ...send, next: null },
        { id: 'vip', ...send, from: 'boss@shop.example' },
      ],
    });
    expect(def.steps.map((s) => s.id)).toEqual(['welcome', 'step_2', 'step_3', 'step_4', 'vip']);
    expect(stepById(def, 'welcome')).toMatchObject({
      next: 'step_2',
      from: 'news@shop.example',
      from_name: 'Shop',
    });
    expect(stepById(def, 'step_3')).toMatchObject({ branches: [{ next: 'vip' }], default_next: 'step_4' });
    expect(stepById(def, 'step_4')).toMatchObject({ next: null });
    expect(stepById(def, 'vip')).toMatchObject({ from: 'boss@shop.example', from_name: 'Shop', next: null });
    expect(stepById(def, 'nope')).toBeUndefined();
  });

  it('is a fixed point: a stored definition parses to itself (GET, then PATCH it back)', () => {
    const rich = parseDefinition({
      trigger: { type: 'event', event: 'purchase', where: [{ property: 'value', op: 'gte', value: 100 }] },
      reentry: { policy: 'cooldown', cooldown_seconds: 3600 },
      goal: { all: [{ event: 'upgrade' }] },
      steps: [
        { type: 'wait_for_event', event: 'opened_app', timeout_seconds: 60, timeout_next: 'nudge' },
        { type: 'update_contact', set_properties: { engaged: true }, join_list_id: LIST },
        { type: 'exit' },
        { id: 'nudge', type: 'wait', window: { from_hour: 9, to_hour: 17, days: [5, 1] } },
        { type: 'wait', until_property: 'properties.trial_ends' },
        { type: 'wait', until: '2030-01-01' },
        { type: 'webhook', url: 'https://hooks.example.com/flow' },
      ],
    });
    expect(rich.steps[3]).toMatchObject({
      window: { from_hour: 9, to_hour: 17, days: [1, 5] },
      next: 'step_5',
    });
    expect(rich.steps[4]).toMatchObject({ until_property: 'trial_ends' });
    expect(rich.steps[5]).toMatchObject({ until: '2030-01-01T00:00:00.000Z' });
    const again: FlowDefinition = parseDefinition(JSON.parse(JSON.stringify(rich)));
    expect(again).toEqual(rich);
  });

  it('accepts every trigger type', () => {
    const triggers = [
      { type: 'contact_created' },
      { type: 'contact_updated' },
      { type: 'contact_updated', condition: { any: [{ field: 'first_name', op: 'exists' }] } },
      { type: 'event', event: 'signup' },
      { type: 'list_joined', list_id: LIST },
      { type: 'segment_entered', segment_id: LIST },
      { type: 'manual' },
    ];
    for (const trigger of triggers)
      expect(parseDefinition({ trigger, steps: [send] }).trigger.type).toBe(trigger.type);
    expect(parseDefinition({ trigger: triggers[1], steps: [send] }).trigger).toEqual({
      type: 'contact_updated',
      condition: null,
    });
    expect(parseDefinition({ trigger: triggers[3], steps: [send] }).trigger).toEqual({
      type: 'event',
      event: 'signup',
      where: [],
    });
  });

  it('refuses bad input with a message naming the field or step', () => {
    const ok = { trigger: { type: 'manual' }, steps: [send] };
    const cases: [unknown, RegExp][] = [
      [null, /object/],
      [{ steps: [send] }, /`trigger` is required/],
      [{ ...ok, trigger: { type: 'birthday' } }, /trigger\.type/],
      [{ ...ok, trigger: { type: 'list_joined', list_id: 'x' } }, /trigger\.list_id/],
      [{ ...ok, trigger: { type: 'event' } }, /trigger\.event/],
      [
        { ...ok, trigger: { type: 'event', event: 'e', where: [{ property: 'v', op: 'near' }] } },
        /trigger\.where\[0\].*unknown operator/,
      ],
      [{ ...ok, trigger: { type: 'contact_updated', condition: { all: [] } } }, /trigger\.condition/],
      [{ ...ok, steps: [] }, /`steps` must be an array of 1 to 100/],
      [{ ...ok, steps: Array(101).fill(send) }, /1 to 100/],
      [{ ...ok, steps: [{ type: 'teleport' }] }, /steps\[0\]\.type/],
      [{ ...ok, steps: [{ type: 'send', html: '<p>x</p>' }] }, /steps\[0\]\.subject/],
      [{ ...ok, steps: [{ type: 'send', subject: 'x' }] }, /steps\[0\]. needs content/],
      [{ ...ok, steps: [send, { ...send, html: '' }] }, /steps\[1\]\.html/],
      [{ ...ok, steps: [{ ...send, template_id: LIST }] }, /not both/],
      [{ ...ok, steps: [{ ...send, from: 'not an address' }] }, /steps\[0\]\.from/],
      [{ ...ok, steps: [{ ...send, next: 'ghost' }] }, /steps\[0\]\.next.*no step "ghost"/],
      [
        {
          ...ok,
          steps: [
            { ...send, id: 'a' },
            { ...send, id: 'a' },
          ],
        },
        /"a" is used twice/,
      ],
      [{ ...ok, steps: [{ ...send, id: 'a b' }] }, /steps\[0\]\.id/],
      [{ ...ok, steps: [{ ...send, colour: 'red' }] }, /steps\[0\].*unknown field "colour"/],
      [{ ...ok, steps: [{ type: 'wait' }] }, /exactly one of/],
      [{ ...ok, steps: [{ type: 'wait', duration_seconds: 0 }] }, /duration_seconds.*1 to/],
      [{ ...ok, steps: [{ type: 'wait', duration_seconds: 366 * 86400 + 1 }] }, /366 days/],
      [{ ...ok, steps: [{ type: 'wait', until: 'tomorrow' }] }, /until/],
      [{ ...ok, steps: [{ type: 'wait', window: { from_hour: 17, to_hour: 9 } }] }, /to_hour/],
      [{ ...ok, steps: [{ type: 'wait', window: { from_hour: 1, to_hour: 9, days: [7] } }] }, /days/],
      [{ ...ok, steps: [{ type: 'wait_for_event', event: 'x' }] }, /timeout_seconds/],
      [{ ...ok, steps: [{ type: 'branch', branches: [] }] }, /branches/],
      [
        {
          ...ok,
          steps: [
            {
              type: 'branch',
              branches: Array(21).fill({ condition: { all: [{ field: 'email', op: 'exists' }] } }),
            },
          ],
        },
        /1 to 20/,
      ],
      [
        {
          ...ok,
          steps: [{ type: 'branch', branches: [{ condition: { all: [{ field: 'shoe', op: 'exists' }] } }] }],
        },
        /branches\[0\]\.condition.*unknown field/,
      ],
      [{ ...ok, steps: [{ type: 'update_contact' }] }, /needs `set_properties`/],
      [{ ...ok, steps: [{ type: 'update_contact', set_properties: { 'a b': 1 } }] }, /set_properties/],
      [{ ...ok, steps: [{ type: 'webhook', url: 'ftp://x' }] }, /steps\[0\]\.url/],
      [{ ...ok, reentry: { policy: 'sometimes' } }, /reentry\.policy/],
      [{ ...ok, reentry: { policy: 'cooldown' } }, /cooldown_seconds/],
      [{ ...ok, goal: { none: [] } }, /`goal`/],
      [{ ...ok, from_name: 'a\nb' }, /from_name/],
    ];
    for (const [input, message] of cases) expect(refusal(input)).toMatch(message);
  });

  it('refuses a loop without a timed wait, and allows one through a wait', () => {
    const loop = (middle: object) => ({
      trigger: { type: 'manual' },
      steps: [{ ...send, id: 'a' }, middle, { type: 'update_contact', set_properties: { n: 1 }, next: 'a' }],
    });
    expect(refusal(loop({ type: 'wait', until: '2020-01-01' }))).toMatch(
      /a → step_2 → step_3 → a.*endless loop/,
    );
    expect(refusal({ trigger: { type: 'manual' }, steps: [{ ...send, next: 'step_1' }] })).toMatch(
      /endless loop/,
    );
    expect(parseDefinition(loop({ type: 'wait', duration_seconds: 60 })).steps).toHaveLength(3);
    expect(
      parseDefinition(loop({ type: 'wait_for_event', event: 'x', timeout_seconds: 60 })).steps,
    ).toHaveLength(3);
  });
});
