import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { PlanFeatureError } from '../../src/domain/core/errors.ts';
import { createSecrets } from '../../src/domain/core/secrets.ts';
import { formatKey, newKeyId, newSecret, parseKey } from '../../src/domain/keys/token.ts';
import { requireFeature } from '../../src/domain/plans/plans.ts';
import { installErrorHandling } from '../../src/http/errors.ts';

describe('API key format', () => {
  it('round-trips id and secret and refuses a changed character by its checksum', () => {
    const id = newKeyId();
    const secret = newSecret();
    const key = formatKey(id, secret);
    expect(parseKey(key)).toEqual({ keyId: id, secret });
    const flipped = key.slice(0, 20) + (key[20] === 'a' ? 'b' : 'a') + key.slice(21);
    expect(parseKey(flipped)).toEqual({ problem: expect.stringMatching(/checksum/) });
    expect(parseKey(`xx_${key.slice(3)}`)).toEqual({ problem: expect.stringMatching(/start with/) });
    expect(parseKey(key.slice(0, -1))).toEqual({ problem: expect.stringMatching(/malformed/) });
    expect(formatKey(newKeyId(), newSecret())).not.toBe(key);
  });
});

describe('secrets', () => {
  it('hashes per server secret, compares, and encrypts with tamper detection', () => {
    const a = createSecrets('a'.repeat(40));
    const b = createSecrets('b'.repeat(40));
    expect(a.hash('x').equals(a.hash('x'))).toBe(true);
    expect(a.hash('x').equals(b.hash('x'))).toBe(false);
    expect(a.matches('x', a.hash('x'))).toBe(true);
    expect(a.matches('y', a.hash('x'))).toBe(false);
    const sealed = a.encrypt('private key');
    expect(a.decrypt(sealed).toString()).toBe('private key');
    sealed[sealed.length - 1] ^= 1;
    expect(() => a.decrypt(sealed)).toThrow();
  });
});

describe('plan features', () => {
  it('names the cheapest plan that has a feature', () => {
    expect(() => requireFeature('pro', 'automations')).not.toThrow();
    const error = (() => {
      try {
        requireFeature('free', 'ab_testing');
      } catch (e) {
        return e as PlanFeatureError;
      }
    })();
    expect(error).toBeInstanceOf(PlanFeatureError);
    expect(error?.feature).toBe('ab_testing');
    expect(error?.upgradeTo).toBe('pro');
  });

  it('answers 402 with error, code, feature and upgrade_to', async () => {
    const app = Fastify();
    installErrorHandling(app);
    app.get('/x', async () => requireFeature('free', 'automations'));
    const res = await app.inject({ method: 'GET', url: '/x' });
    expect(res.statusCode).toBe(402);
    expect(res.json()).toEqual({
      error: expect.stringMatching(/Starter/),
      code: 'plan_upgrade_required',
      feature: 'automations',
      upgrade_to: 'starter',
    });
  });
});
