/**
 * API keys: long-lived bearer credentials of a user (`user:<id>`) or a
 * service account (`service_account:<client_id>`), answered once as
 * `lk_<prefix>_<secret>`. The prefix is public and names the key; only the
 * SHA-256 digest of the secret is stored, under it. A key may be narrowed to
 * scopes and an organization, and may expire; a revoked or expired key, or one
 * whose service account is gone or disabled, resolves to nobody.
 */
import { randomBytes } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { ApiKeyRecord, ClientStore } from './client_store.ts';
import { digestEqual, digestOf, SCOPE_TOKEN } from './secret_digest.ts';

/** An API key's wire view: the stored record without the secret's digest, and the public `lk_<prefix>` that names it. */
export type PublicApiKey = Omit<ApiKeyRecord, 'digest'> & { prefix: string };

/** Who an API key acts for, once resolved. */
export interface ApiKeyPrincipal {
  kind: 'user' | 'service_account';
  /** The user id, or the client id of the service account. */
  id: string;
  key: ApiKeyRecord;
}

/** The API key format: `lk_<prefix>_<secret>`; the prefix is public (it names the key), the secret is 256 random bits. */
const API_KEY = /^lk_([A-Za-z0-9]{16})_([A-Za-z0-9_-]{43})$/;

const invalidKey = (message: string): LatchkeyError => new LatchkeyError('invalid_argument', message, { reason: 'invalid_api_key' });

export class ApiKeys {
  readonly #store: ClientStore;
  readonly #now: () => number;

  constructor(store: ClientStore, nowSeconds: () => number) {
    this.#store = store;
    this.#now = nowSeconds;
  }

  /**
   * `create_api_key`: a key for `principal` (`user:<id>` or
   * `service_account:<client_id>`), answered once as `lk_<prefix>_<secret>`;
   * only the digest of the secret is stored, under the public prefix.
   */
  async create(principal: string, input: { name: string; scopes?: readonly string[] | undefined; expires_at?: number | null | undefined; organization_id?: string | null | undefined }): Promise<{ api_key: string; key: PublicApiKey }> {
    const now = this.#now();
    const name = input.name.trim();
    if (name.length === 0 || name.length > 256) throw invalidKey('name must be 1 to 256 characters');
    const scopes = [...new Set(input.scopes ?? [])];
    for (const s of scopes) if (!SCOPE_TOKEN.test(s)) throw invalidKey(`scope ${JSON.stringify(s)} is not a valid scope token`);
    if (scopes.length > 100) throw invalidKey('at most 100 scopes');
    const expires = input.expires_at ?? null;
    if (expires !== null && (!Number.isInteger(expires) || expires <= now)) throw invalidKey('expires_at must be a unix time in the future');
    const org = input.organization_id ?? null;
    if (org !== null && !/^[A-Za-z0-9._:-]{1,128}$/.test(org)) throw invalidKey('organization_id is not valid');
    const keys = await this.#store.listApiKeys(principal);
    if (keys.filter((k) => k.revoked_at === null).length >= 100) throw new LatchkeyError('resource_exhausted', 'at most 100 live API keys per principal', { reason: 'too_many_api_keys' });
    const prefix = alnum(16);
    const secret = randomBytes(32).toString('base64url');
    const record: ApiKeyRecord = { id: prefix, digest: digestOf(secret), principal, name, scopes, organization_id: org, expires_at: expires, last_used_at: null, revoked_at: null, created_at: now };
    await this.#store.insertApiKey(record);
    return { api_key: `lk_${prefix}_${secret}`, key: apiKeyView(record) };
  }

  /** `api_keys`: the keys of `principal`, revoked ones included. */
  async list(principal: string): Promise<PublicApiKey[]> {
    return (await this.#store.listApiKeys(principal)).map(apiKeyView);
  }

  /** `revoke_api_key`: refused from the next call on. `not_found` for a key that is not the principal's or already revoked. */
  async revoke(principal: string, id: string): Promise<void> {
    const prefix = id.startsWith('lk_') ? id.slice(3, 19) : id;
    if (!(await this.#store.revokeApiKey(prefix, principal, this.#now()))) throw new LatchkeyError('not_found', 'API key not found', { reason: 'api_key_not_found' });
  }

  /** True when `value` has the shape of an API key (so a bearer credential is tried as one). */
  static looksLikeApiKey(value: string): boolean {
    return API_KEY.test(value);
  }

  /**
   * The principal of an API key: live (not revoked, not expired), its secret
   * matching, its service account still registered and enabled. Records the
   * use (at most once a minute per key). Undefined for anything else.
   */
  async resolve(value: string): Promise<ApiKeyPrincipal | undefined> {
    const m = API_KEY.exec(value);
    if (!m) return undefined;
    const key = await this.#store.getApiKey(m[1] ?? '');
    const ok = key !== undefined && digestEqual(m[2] ?? '', key.digest);
    const now = this.#now();
    if (!ok || key.revoked_at !== null || (key.expires_at !== null && key.expires_at <= now)) return undefined;
    let kind: 'user' | 'service_account';
    let id: string;
    if (key.principal.startsWith('user:')) {
      kind = 'user';
      id = key.principal.slice(5);
    } else if (key.principal.startsWith('service_account:')) {
      kind = 'service_account';
      id = key.principal.slice(16);
      const client = await this.#store.getClient(id);
      if (client === undefined || client.disabled || client.kind !== 'service_account') return undefined;
    } else return undefined;
    if (key.last_used_at === null || now - key.last_used_at >= 60) await this.#store.touchApiKey(key.id, now);
    return { kind, id, key };
  }
}

function apiKeyView(k: ApiKeyRecord): PublicApiKey {
  const { digest: _secret, ...view } = k;
  return { ...view, prefix: `lk_${k.id}` };
}

function alnum(n: number): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const out: string[] = [];
  while (out.length < n) {
    for (const b of randomBytes(n * 2)) {
      if (b < 248 && out.length < n) out.push(chars[b % 62] as string);
    }
  }
  return out.join('');
}
