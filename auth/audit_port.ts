/**
 * The audit port: where the identity service reports what it refused and
 * why. The precise reason of a refusal (a wrong password, an unknown
 * account, a locked second factor) is known only here, at the point where the
 * refusal is raised; the client gets one generic answer (security matrix A1),
 * the audit log the precise one. The admin service implements the port (its
 * audit log and webhooks); the server binds it to each request, so an entry
 * carries the caller's address and agent. No one outside this folder reads a
 * refusal's cause.
 */
import { LatchkeyError } from '../engine/errors.ts';

/** One event of the identity flows for the audit log. */
export interface AuditEvent {
  /** The audit action, e.g. `user.login_failed`. */
  readonly action: string;
  /** The user the event concerns, when it is known. */
  readonly userId?: string | undefined;
  /** What the entry records besides: for a refusal, its precise `reason`. */
  readonly metadata: Readonly<Record<string, unknown>>;
}

/** Records an event; never rejects (a failure to record is the implementer's to log). */
export type AuditPort = (event: AuditEvent) => Promise<void>;

/** Which refusals of one flow are audited, under which action, with which extra metadata. */
export interface RefusalRule {
  readonly action: string;
  /** Whether a refusal of this code and reason is a security event worth an entry. */
  readonly audited: (err: LatchkeyError) => boolean;
  readonly metadata?: Readonly<Record<string, unknown>>;
}

/** The precise reason and user of a refusal this service raised (carried in the error's never-serialised cause). */
function refusalOf(err: LatchkeyError): { reason: string; userId?: string } {
  const cause = err.cause as { internal_reason?: unknown; user_id?: unknown } | undefined;
  const reason = typeof cause?.internal_reason === 'string' ? cause.internal_reason : (err.reason ?? err.code);
  return typeof cause?.user_id === 'string' ? { reason, userId: cause.user_id } : { reason };
}

/**
 * Runs a flow and, when it refuses by `rule`, reports the refusal through
 * `port` (awaited, so the entry exists when the client hears the answer)
 * before passing the refusal on unchanged.
 */
export async function auditRefusals<T>(port: AuditPort | undefined, rule: RefusalRule, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (port !== undefined && err instanceof LatchkeyError && rule.audited(err)) {
      const { reason, userId } = refusalOf(err);
      await port({ action: rule.action, userId, metadata: { reason, ...rule.metadata } });
    }
    throw err;
  }
}

/**
 * A refused first factor (login, a magic link): every refusal about the
 * credentials or the account. Of the refusals by configuration, only the one
 * about this user (MFA applies but no second factor reaches them) is a
 * security event; malformed requests are not.
 */
export const LOGIN_REFUSED: RefusalRule = {
  action: 'user.login_failed',
  audited: (err) => err.code !== 'invalid_argument' && (err.code !== 'failed_precondition' || err.reason === 'mfa_method_unavailable'),
};

/** A refused second factor: a wrong, expired or locked code. */
export const SECOND_FACTOR_REFUSED: RefusalRule = {
  action: 'user.login_failed',
  audited: (err) => err.code === 'unauthenticated' || err.code === 'resource_exhausted',
  metadata: { mfa: true },
};

/** A refused resend of a second-factor code. */
export const RESEND_REFUSED: RefusalRule = { ...SECOND_FACTOR_REFUSED, action: 'user.otp_resend_failed' };

/** A magic link that proved the first factor when no second factor can reach its user: audited like a refused login. */
export const LINK_LOGIN_REFUSED: RefusalRule = {
  action: 'user.login_failed',
  audited: (err) => err.reason === 'mfa_method_unavailable',
};

/**
 * A refused passkey sign-in: every refusal about the answer, the credential
 * or the account (a signature counter that went backwards among them, the
 * sign of a cloned authenticator); malformed requests and disabled passkeys
 * are not security events.
 */
export const PASSKEY_LOGIN_REFUSED: RefusalRule = {
  action: 'user.login_failed',
  audited: (err) => err.code !== 'invalid_argument' && err.code !== 'failed_precondition',
  metadata: { passkey: true },
};

/** A refused passkey as the second factor of a login. */
export const PASSKEY_SECOND_FACTOR_REFUSED: RefusalRule = {
  action: 'user.login_failed',
  audited: (err) => err.code === 'unauthenticated' || err.code === 'permission_denied',
  metadata: { mfa: true, passkey: true },
};
