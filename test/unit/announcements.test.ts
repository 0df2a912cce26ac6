import { describe, expect, it } from 'vitest';
import {
  type AudienceEvent,
  MAX_IDS_PER_JOB,
  mergeAnnouncements,
} from '../../src/domain/audience/triggers.ts';

const P1 = '00000000-0000-4000-8000-000000000001';
const P2 = '00000000-0000-4000-8000-000000000002';

describe('merging outbox announcements into audience_event jobs', () => {
  it('merges by type and project, keeping the order of ids and of first appearance', () => {
    const events: AudienceEvent[] = [
      { type: 'event.tracked', project_id: P1, event_ids: ['1', '2'] },
      { type: 'contact.created', project_id: P1, contact_ids: ['a'] },
      { type: 'event.tracked', project_id: P2, event_ids: ['3'] },
      { type: 'event.tracked', project_id: P1, event_ids: ['4'] },
      { type: 'contact.created', project_id: P1, contact_ids: ['b', 'c'] },
    ];
    expect(mergeAnnouncements(events)).toEqual([
      { type: 'event.tracked', project_id: P1, event_ids: ['1', '2', '4'] },
      { type: 'contact.created', project_id: P1, contact_ids: ['a', 'b', 'c'] },
      { type: 'event.tracked', project_id: P2, event_ids: ['3'] },
    ]);
  });

  it('keeps announcements about different lists or subscription states apart', () => {
    const merged = mergeAnnouncements([
      { type: 'list.joined', project_id: P1, list_id: 'l1', contact_ids: ['a'] },
      { type: 'list.joined', project_id: P1, list_id: 'l2', contact_ids: ['b'] },
      { type: 'contact.subscription_changed', project_id: P1, subscribed: true, contact_ids: ['c'] },
      { type: 'contact.subscription_changed', project_id: P1, subscribed: false, contact_ids: ['d'] },
    ]);
    expect(merged).toHaveLength(4);
  });

  it('keeps the ids of an announcement that follows one without ids under the same key', () => {
    const merged = mergeAnnouncements([
      { type: 'event.tracked', project_id: P1 },
      { type: 'event.tracked', project_id: P1, event_ids: ['1', '2'] },
    ]);
    expect(merged.flatMap((m) => m.event_ids ?? [])).toEqual(['1', '2']);
  });

  it(`splits a merge at ${MAX_IDS_PER_JOB.toLocaleString('en')} ids per job and loses none`, () => {
    const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => String(from + i));
    const merged = mergeAnnouncements([
      { type: 'event.tracked', project_id: P1, event_ids: ids(0, 7_000) },
      { type: 'event.tracked', project_id: P1, event_ids: ids(7_000, 7_000) },
      { type: 'event.tracked', project_id: P1, event_ids: ids(14_000, 7_000) },
    ]);
    expect(merged.map((m) => m.event_ids?.length)).toEqual([10_000, 10_000, 1_000]);
    expect(merged.flatMap((m) => m.event_ids)).toEqual(ids(0, 21_000));
  });
});
