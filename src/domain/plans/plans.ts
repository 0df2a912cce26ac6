import { PlanFeatureError } from '../core/errors.ts';

/** The plans, cheapest first. One place decides what each plan includes. */
export interface Plan {
  id: string;
  name: string;
  contactLimit: number; // 0 = unmetered
  includedPerMonth: number | null; // null = unmetered
  allowsOverage: boolean;
  sharedDomainDailyCap: number;
  features: Record<string, boolean>;
}

const FEATURES = [
  'automations',
  'custom_domains',
  'ab_testing',
  'inbound',
  'webhooks',
  'segments',
  'campaigns',
  'dedicated_ip',
] as const;
export type Feature = (typeof FEATURES)[number];
// each plan has the features of the plans below it, plus its own
const TIER_FEATURES: Feature[][] = [
  ['custom_domains', 'segments', 'campaigns', 'webhooks'],
  ['automations', 'inbound'],
  ['ab_testing'],
  ['dedicated_ip'],
];
const tier = (level: number) => {
  const on = new Set(TIER_FEATURES.slice(0, level + 1).flat());
  return Object.fromEntries(FEATURES.map((f) => [f, on.has(f)]));
};

export const PLANS: Plan[] = [
  {
    id: 'free',
    name: 'Free',
    contactLimit: 1_000,
    includedPerMonth: 3_000,
    allowsOverage: false,
    sharedDomainDailyCap: 100,
    features: tier(0),
  },
  {
    id: 'starter',
    name: 'Starter',
    contactLimit: 10_000,
    includedPerMonth: 50_000,
    allowsOverage: true,
    sharedDomainDailyCap: 500,
    features: tier(1),
  },
  {
    id: 'pro',
    name: 'Pro',
    contactLimit: 100_000,
    includedPerMonth: 500_000,
    allowsOverage: true,
    sharedDomainDailyCap: 1_000,
    features: tier(2),
  },
  {
    id: 'unlimited',
    name: 'Unlimited (self-hosted)',
    contactLimit: 0,
    includedPerMonth: null,
    allowsOverage: true,
    sharedDomainDailyCap: 10_000,
    features: tier(3),
  },
];

/**
 * The plan of a new workspace when POSTHORN_DEFAULT_PLAN is unset: a self-hosted server has no
 * upgrade to sell, so nothing is walled; an operator who sells plans sets `free`.
 */
export const DEFAULT_PLAN = 'unlimited';

/** The plan a workspace whose stored plan is unknown is held to: the least, never more than it paid for. */
const FALLBACK_PLAN = 'free';

export function findPlan(id: string): Plan | undefined {
  return PLANS.find((p) => p.id === id);
}

export function planOrDefault(id: string): Plan {
  return findPlan(id) ?? (findPlan(FALLBACK_PLAN) as Plan);
}

/** What a plan may lack: a feature, room for more contacts, or sending past the monthly allowance. */
export type PlanNeed = Feature | 'contacts' | 'sending_overage';

function meets(plan: Plan, need: PlanNeed, current: Plan): boolean {
  if (need === 'contacts') return plan.contactLimit === 0 || plan.contactLimit > current.contactLimit;
  if (need === 'sending_overage') return plan.allowsOverage;
  return plan.features[need] === true;
}

/** The plan to upgrade to for what `current` lacks: the cheapest other plan that has it, or null. */
export function upgradeFor(need: PlanNeed, current: Plan): Plan | null {
  return PLANS.find((p) => p.id !== current.id && meets(p, need, current)) ?? null;
}

/** Throws 402 naming the cheapest plan that has the feature, unless the plan has it. */
export function requireFeature(planId: string, name: Feature): void {
  const plan = planOrDefault(planId);
  if (plan.features[name]) return;
  const upgrade = upgradeFor(name, plan);
  throw new PlanFeatureError(
    name,
    upgrade?.id ?? null,
    upgrade
      ? `The ${plan.name} plan does not include ${name.replace(/_/g, ' ')}; upgrade to ${upgrade.name} (${upgrade.id}) to use it`
      : `No plan includes ${name}`,
  );
}
