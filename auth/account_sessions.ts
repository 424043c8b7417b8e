/**
 * The account center's view of a user's sessions and sign-in methods:
 * `list_sessions` / `revoke_session` (and their admin forms) and
 * `linked_identities` / `unlink_identity`. {@link AuthService} delegates to
 * it; errors are {@link LatchkeyError}s with precise codes.
 *
 * Sign-in methods: a password (`basic_auth`, `mobile_basic_auth`), each
 * social or OpenID provider the account signed in with (named in
 * `signup_methods`, its provider accounts by subject in the provider
 * identity store), and the emailed link when magic-link login is enabled and
 * the address is verified. Unlinking a provider removes its identities too,
 * and is refused when no other method would remain, so an account is never
 * left without a way in.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { MemoryStore } from './memory_store.ts';
import type { ProviderIdentityStore } from './provider_identity_store.ts';
import type { SessionListing, SessionManager } from './sessions.ts';
import { SOCIAL_LOGIN_PROVIDERS, type SocialLoginProvider } from './social_providers.ts';
import type { UserRecord, UserStore } from './user_store_types.ts';

/** One session as `list_sessions` answers it. */
export interface SessionInfo {
  id: string;
  /** A short label of the browser and system ("Firefox on Linux"), from the user agent. */
  browser: string;
  user_agent: string;
  ip: string;
  login_method: string;
  /** Unix seconds: when the session was opened. */
  first_seen_at: number;
  /** Unix seconds: when the session was last opened or refreshed. */
  last_seen_at: number;
  /** True for the session of the call itself. */
  current: boolean;
}

/** One linked provider as `linked_identities` answers it. */
export interface LinkedIdentityInfo {
  provider: SocialLoginProvider;
  /** The address the provider reported for the account last linked or used (null: none, or linked before identities were recorded). */
  email: string | null;
  /** Unix seconds: when that provider account was linked (null when it was linked before identities were recorded). */
  linked_at: number | null;
}

/** What the caller's principal says about its session. */
export interface SessionCaller {
  userId: string;
  sessionId?: string | undefined;
}

const BROWSERS: readonly (readonly [RegExp, string])[] = [
  [/\bEdg(?:e|A|iOS)?\//, 'Edge'],
  [/\bOPR\/|\bOpera\b/, 'Opera'],
  [/\bSamsungBrowser\//, 'Samsung Internet'],
  [/\bFirefox\/|\bFxiOS\//, 'Firefox'],
  [/\bChrom(?:e|ium)\/|\bCriOS\//, 'Chrome'],
  [/\bSafari\//, 'Safari'],
  [/\bcurl\//, 'curl'],
  [/\bnode\b|\bundici\b/i, 'Node.js'],
  [/\bgrpc-/, 'gRPC client'],
];
const SYSTEMS: readonly (readonly [RegExp, string])[] = [
  [/\bAndroid\b/, 'Android'],
  [/\biPhone\b|\biPad\b|\biOS\b/, 'iOS'],
  [/\bWindows\b/, 'Windows'],
  [/\bMac OS X\b|\bMacintosh\b/, 'macOS'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\bLinux\b/, 'Linux'],
];

/** "Firefox on Linux", "Chrome", "Unknown browser": a label for a user agent (not an identification: agents lie). */
export function browserLabel(userAgent: string): string {
  const browser = BROWSERS.find(([re]) => re.test(userAgent))?.[1];
  const system = SYSTEMS.find(([re]) => re.test(userAgent))?.[1];
  if (browser === undefined) return system === undefined ? 'Unknown browser' : `Unknown browser on ${system}`;
  return system === undefined ? browser : `${browser} on ${system}`;
}

const seconds = (ms: number): number => Math.floor(ms / 1000);

function infoOf(l: SessionListing, currentSid: string | undefined): SessionInfo {
  const d = l.device;
  return {
    id: l.session.sid,
    browser: browserLabel(d?.user_agent ?? ''),
    user_agent: d?.user_agent ?? '',
    ip: d?.ip ?? '',
    login_method: l.session.login_method,
    first_seen_at: seconds(d?.first_seen_ms ?? l.session.created_ms),
    last_seen_at: seconds(d?.last_seen_ms ?? l.session.created_ms),
    current: currentSid !== undefined && l.session.sid === currentSid,
  };
}

const sessionNotFound = (): LatchkeyError => new LatchkeyError('not_found', 'session not found', { reason: 'session_not_found' });

/** The providers a user's `signup_methods` names, in the order they were linked. */
export function linkedProviders(user: UserRecord): SocialLoginProvider[] {
  const known = new Set<string>(SOCIAL_LOGIN_PROVIDERS);
  return user.signup_methods.split(',').filter((m): m is SocialLoginProvider => known.has(m));
}

export class AccountSessions {
  readonly #sessions: SessionManager;
  readonly #users: UserStore;
  readonly #magicLink: boolean;
  readonly #store: MemoryStore;
  /** The provider accounts linked to users, by (provider, subject). */
  readonly identities: ProviderIdentityStore;

  constructor(deps: { sessions: SessionManager; users: UserStore; identities: ProviderIdentityStore; store: MemoryStore; magicLinkLogin: boolean }) {
    this.#store = deps.store;
    this.identities = deps.identities;
    this.#sessions = deps.sessions;
    this.#users = deps.users;
    this.#magicLink = deps.magicLinkLogin;
  }

  /** The live sessions of `caller.userId`, the most recently seen first; the caller's own one is `current`. */
  async list(caller: SessionCaller): Promise<SessionInfo[]> {
    return (await this.#sessions.listForUser(caller.userId)).map((l) => infoOf(l, caller.sessionId));
  }

  /**
   * Ends the session `id` of `caller.userId`, or with `allOthers` every
   * session of the user but the caller's. Exactly one of the two (otherwise
   * `invalid_argument` `invalid_revoke_session_request`); a session that is
   * not the user's live one is `not_found` `session_not_found`, whether it
   * exists for someone else or not at all. Ending a session revokes every
   * token issued in it on every process that shares the memory store.
   * Returns how many sessions were ended.
   */
  async revoke(caller: SessionCaller, input: { id?: string | undefined; all_others?: boolean | undefined }): Promise<number> {
    const id = input.id === undefined || input.id === '' ? undefined : input.id;
    const allOthers = input.all_others === true;
    if ((id === undefined) === !allOthers) {
      throw new LatchkeyError('invalid_argument', 'give either id or all_others: true', { reason: 'invalid_revoke_session_request' });
    }
    if (allOthers) return this.#sessions.endAllForUser(caller.userId, caller.sessionId);
    const session = await this.#sessions.get(id!);
    if (session === undefined || session.user_id !== caller.userId) throw sessionNotFound();
    await this.#sessions.end(session.sid);
    return 1;
  }

  /** Admin: the live sessions of any user (none is `current`). `not_found` `user_not_found` for an unknown user. */
  async listOf(userId: string): Promise<SessionInfo[]> {
    if ((await this.#users.findById(userId)) === undefined) throw new LatchkeyError('not_found', 'user not found', { reason: 'user_not_found' });
    return (await this.#sessions.listForUser(userId)).map((l) => infoOf(l, undefined));
  }

  /** Admin: ends one session of any user; `not_found` `session_not_found` when it is not live. Returns the user's id. */
  async revokeAny(id: string): Promise<string> {
    const session = await this.#sessions.get(id);
    if (session === undefined) throw sessionNotFound();
    await this.#sessions.end(session.sid);
    return session.user_id;
  }

  /**
   * The providers linked to `user`, in the order they were linked, each with
   * the address and link time of its most recently linked provider account
   * (an account linked before identities were recorded has neither until
   * its next sign-in with the provider records it).
   */
  async linked(user: UserRecord): Promise<LinkedIdentityInfo[]> {
    const records = await this.identities.listByUser(user.id);
    return linkedProviders(user).map((provider) => {
      const last = records.filter((r) => r.provider === provider).at(-1);
      return { provider, email: last?.email ?? null, linked_at: last?.created_at ?? null };
    });
  }

  /** The sign-in methods of `user` other than the provider `except`. */
  otherMethods(user: UserRecord, except: SocialLoginProvider): string[] {
    const out: string[] = [];
    if (user.password !== null) out.push(user.email !== null ? 'basic_auth' : 'mobile_basic_auth');
    if (this.#magicLink && user.email !== null && user.email_verified_at !== null) out.push('magic_link_login');
    for (const p of linkedProviders(user)) if (p !== except) out.push(p);
    return out;
  }

  /**
   * Removes `provider` from the sign-in methods of `user`, with every
   * provider account of it linked to the user (so none signs in here by its
   * subject any more), and ends the other sessions opened with it. `invalid_argument` `invalid_provider` for a name
   * that is no provider, `not_found` `identity_not_linked` when it is not
   * linked, `failed_precondition` `last_sign_in_method` when it is the only
   * way in left, `aborted` `concurrent_change` while another unlink of the
   * same account is under way (two at once could each leave the other as the
   * last method and so leave none). A later sign-in with the provider's verified address of the
   * account links it again, as the first one did.
   */
  async unlink(user: UserRecord, provider: string, currentSid: string | undefined): Promise<UserRecord> {
    if (!(SOCIAL_LOGIN_PROVIDERS as readonly string[]).includes(provider)) {
      throw new LatchkeyError('invalid_argument', `provider: must be one of ${SOCIAL_LOGIN_PROVIDERS.join(', ')}`, { reason: 'invalid_provider', details: { field: 'provider' } });
    }
    const p = provider as SocialLoginProvider;
    const lock = `unlink_lock:${user.id}`;
    if (!(await this.#store.setIfAbsent(lock, '1', 10))) {
      throw new LatchkeyError('aborted', "another change of this account's sign-in methods is under way; try again", { reason: 'concurrent_change' });
    }
    try {
      return await this.#unlink((await this.#users.findById(user.id)) ?? user, p, currentSid);
    } finally {
      await this.#store.del(lock);
    }
  }

  async #unlink(user: UserRecord, p: SocialLoginProvider, currentSid: string | undefined): Promise<UserRecord> {
    const provider = p;
    if (!linkedProviders(user).includes(p)) throw new LatchkeyError('not_found', `${provider} is not linked to this account`, { reason: 'identity_not_linked' });
    if (this.otherMethods(user, p).length === 0) {
      throw new LatchkeyError('failed_precondition', 'this is the only way to sign in to this account; set a password or link another provider first', { reason: 'last_sign_in_method' });
    }
    // The identities first: should the second write fail, the provider stays listed but signs in by subject no more.
    await this.identities.unlink(user.id, p);
    const methods = user.signup_methods.split(',').filter((m) => m.length > 0 && m !== p);
    const updated = await this.#users.update(user.id, { signup_methods: methods.join(',') });
    for (const l of await this.#sessions.listForUser(user.id)) {
      if (l.session.login_method === p && l.session.sid !== currentSid) await this.#sessions.end(l.session.sid);
    }
    return updated;
  }
}
