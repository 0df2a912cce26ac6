import { describe, expect, it } from 'vitest';
import { watchedOf } from '../../src/domain/shaping/watched.ts';

/** What the circuit breaker judges a message as part of (reputation/watched.ts). */

const domains = new Map([['p1:news.example', 'd1']]);
const row = (over: Partial<Parameters<typeof watchedOf>[0]>) => ({
  project_id: 'p1',
  from_address: 'hello@News.Example',
  stream: 'marketing',
  campaign_id: null,
  flow_id: null,
  ...over,
});

describe('what the breaker watches a message as part of', () => {
  it("a campaign's message: the campaign, its sending domain and the project", () => {
    expect(watchedOf(row({ campaign_id: 'c1' }), domains)).toEqual([
      { scope: 'campaign', id: 'c1', projectId: 'p1' },
      { scope: 'domain', id: 'd1', projectId: 'p1' },
      { scope: 'project', id: 'p1', projectId: 'p1' },
    ]);
  });

  it("a flow's message from an address not on a domain of the project: the flow and the project", () => {
    expect(
      watchedOf(row({ flow_id: 'f1', stream: 'automation', from_address: 'a@shared.test' }), domains),
    ).toEqual([
      { scope: 'flow', id: 'f1', projectId: 'p1' },
      { scope: 'project', id: 'p1', projectId: 'p1' },
    ]);
  });

  it('transactional mail: nothing, unless the operator chose that stops hold it too', () => {
    expect(watchedOf(row({ stream: 'transactional' }), domains)).toEqual([]);
    expect(watchedOf(row({ stream: 'transactional' }), domains, true)).toEqual([
      { scope: 'domain', id: 'd1', projectId: 'p1' },
      { scope: 'project', id: 'p1', projectId: 'p1' },
    ]);
  });
});
