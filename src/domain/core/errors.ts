/**
 * Domain errors carry a string code and a message that names the field and the rule broken.
 * The HTTP door maps them to status codes; the SMTP door maps `permanent` to 5xx and the rest to 4xx.
 */
export class DomainError extends Error {
  readonly code: string;
  readonly permanent: boolean = true;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
    this.name = new.target.name;
  }
}

/** The input is malformed or breaks a rule (400). */
export class ValidationError extends DomainError {
  constructor(message: string) {
    super('validation_error', message);
  }
}

/** The caller is not authenticated: no key, a bad key, an expired or revoked one (401). */
export class AuthenticationError extends DomainError {
  constructor(message: string) {
    super('authentication_error', message);
  }
}

/** The resource does not exist or is not the caller's (404: never reveals which). */
export class NotFoundError extends DomainError {
  constructor(what: string) {
    super('not_found', `${what} not found`);
  }
}

/** The request conflicts with existing state (409). */
export class ConflictError extends DomainError {
  constructor(message: string) {
    super('conflict', message);
  }
}

/** The plan lacks a feature (402). */
export class PlanFeatureError extends DomainError {
  readonly feature: string;
  readonly upgradeTo: string | null;
  constructor(feature: string, upgradeTo: string | null, message: string) {
    super('plan_upgrade_required', message);
    this.feature = feature;
    this.upgradeTo = upgradeTo;
  }
}

/**
 * What a person does about a 402 on a self-hosted server, where there is no upgrade to buy: the
 * operator moves the workspace (src/cli/operator.ts) or starts new workspaces on another plan.
 */
export function onThisServer(upgradeTo: string | null): string {
  return `On this server the operator moves a workspace to another plan with \`npx posthorn admin plan <workspace id or name> ${upgradeTo ?? 'unlimited'}\`, or starts new workspaces on one with POSTHORN_DEFAULT_PLAN`;
}

/** The words a refusal is answered with (`{"error"}`, a checklist item): a 402 adds what the operator does. */
export function refusalText(err: DomainError): string {
  return err instanceof PlanFeatureError ? `${err.message}. ${onThisServer(err.upgradeTo)}` : err.message;
}

/**
 * Which limit a 429 is: `rate_limited`, too many requests (or attempts) for now, retry after
 * Retry-After seconds; `daily_limit`, the shared domain's daily sending cap, reset at midnight UTC
 * (or lifted by sending from a verified domain of one's own).
 */
export type RateLimitCode = 'rate_limited' | 'daily_limit';

/** Too many requests or sends for now; trying later can succeed (429, its `code` saying which limit). */
export class RateLimitError extends DomainError {
  override readonly permanent = false;
  override readonly code: RateLimitCode;
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number, code: RateLimitCode = 'rate_limited') {
    super(code, message);
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The action is understood but refused in the current state (403 over HTTP, 5xx over SMTP). */
export class ForbiddenError extends DomainError {
  constructor(message: string) {
    super('forbidden', message);
  }
}

/** A send refused by a check (unconfirmed account, unverified `from` domain, footer): 400, SMTP 550. */
export class SendRefusedError extends DomainError {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super('send_refused', message);
    this.reason = reason;
  }
}
