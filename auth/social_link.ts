/**
 * Social login by provider identity, and linking a provider account to the
 * signed-in user from the account center (the relying-party flows are
 * {@link SocialLogin}'s; this file decides whose account a provider account
 * is).
 *
 * - A provider account already linked (its provider and subject are in the
 *   provider identity store) signs in its owner, whatever address the
 *   provider reports now. An identity whose user no longer exists is
 *   removed and counts as unknown.
 * - An unknown one goes by the verified-email rule of social login, and the
 *   account it reaches (or creates) records it, so the next sign-in finds it
 *   by subject. Accounts that named the provider in `signup_methods` before
 *   identities were recorded keep working this way and are recorded on their
 *   next sign-in.
 * - A link (`POST /oauth_link/<provider>`) carries the browser session that
 *   started it in its state. Its callback attaches the provider account to
 *   that session's user only while that same session is still live in the
 *   browser that returns (its cookie is presented), whatever the provider's
 *   address: the user proved both accounts in one browser. A provider
 *   account another user holds is refused (`already_exists`
 *   `identity_owned_by_another_account`) and nothing changes. A link never
 *   opens a session nor ends one.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { AuthService } from './auth_service.ts';
import { identityOwnedElsewhere, type ProviderIdentity } from './provider_identity_store.ts';
import type { SocialProfile } from './social_providers.ts';
import type { UserRecord } from './user_store_types.ts';

/** The session a link was started in: the callback attaches to its user only while it is live in the returning browser. */
export interface LinkIntent {
  sid: string;
  user_id: string;
}

const linkSessionMismatch = (): LatchkeyError =>
  new LatchkeyError('permission_denied', 'the account to connect to is no longer signed in in this browser; sign in and connect again', {
    reason: 'link_session_mismatch',
  });

/** The user who holds the provider account (`provider`, `subject`) with its identity, or undefined. */
export async function ownerBySubject(auth: AuthService, provider: string, subject: string): Promise<{ user: UserRecord; identity: ProviderIdentity } | undefined> {
  const identity = await auth.identities.find(provider, subject);
  if (identity === undefined) return undefined;
  const user = await auth.users.findById(identity.user_id);
  if (user !== undefined) return { user, identity };
  // Left by a user removed without its data (a DynamoDB delete is no transaction): forgotten, so it can be linked again.
  await auth.identities.remove(provider, subject);
  return undefined;
}

/**
 * Records the provider account of `profile` as `userId`'s, or brings the
 * address seen up to date; nothing is written when `known`, the identity
 * as read, is already that. `already_exists`
 * `identity_owned_by_another_account` when another user took it meanwhile.
 */
export async function recordIdentity(auth: AuthService, provider: string, profile: SocialProfile, userId: string, known?: ProviderIdentity): Promise<void> {
  const trimmed = profile.email?.trim();
  const email = trimmed === undefined || trimmed === '' ? null : trimmed;
  // An ordinary sign-in by subject writes nothing here.
  if (known !== undefined && known.user_id === userId && known.email === email) return;
  await auth.identities.link({ provider, subject: profile.subject, user_id: userId, email });
}

/** `signup_methods` with `provider` added (unchanged when it is there). */
export function withMethod(signupMethods: string, provider: string): string {
  const methods = signupMethods.split(',').filter((m) => m.length > 0);
  return methods.includes(provider) ? signupMethods : [...methods, provider].join(',');
}

/**
 * The link callback: attaches the provider account of `profile` to the user
 * of `intent` and returns the user. Refused with `permission_denied`
 * `link_session_mismatch` unless `presentedSession` is the browser cookie of
 * the live session `intent` names, with `permission_denied`
 * `account_deactivated` / `access_revoked` for such an account, and with
 * `already_exists` `identity_owned_by_another_account` when another user
 * holds the provider account; in each case nothing is written.
 */
export async function attachIdentity(auth: AuthService, intent: LinkIntent, provider: string, profile: SocialProfile, presentedSession: string | undefined): Promise<UserRecord> {
  const session = presentedSession === undefined ? undefined : await auth.sessions.fromCookie(presentedSession);
  if (session === undefined || session.sid !== intent.sid || session.user_id !== intent.user_id) throw linkSessionMismatch();
  const user = await auth.users.findById(intent.user_id);
  if (user === undefined) throw linkSessionMismatch();
  if (user.deactivated_at !== null) throw new LatchkeyError('permission_denied', 'this account has been deactivated', { reason: 'account_deactivated' });
  if (user.revoked_timestamp !== null) throw new LatchkeyError('permission_denied', 'user access has been revoked', { reason: 'access_revoked' });
  const owner = await ownerBySubject(auth, provider, profile.subject);
  if (owner !== undefined && owner.user.id !== user.id) throw identityOwnedElsewhere();
  await recordIdentity(auth, provider, profile, user.id, owner?.identity);
  const methods = withMethod(user.signup_methods, provider);
  return methods === user.signup_methods ? user : auth.users.update(user.id, { signup_methods: methods });
}
