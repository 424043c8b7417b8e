/**
 * An organization's SCIM bearer tokens (docs/scim.md): created by a check of
 * `can_update`, answered once, kept as a public prefix and the SHA-256
 * digest of the whole token, revocable, and authenticated in constant time.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import { digest, invalid, orgNotFound, page, type OrgCall, type OrgCore } from './org_core.ts';
import type { OrgRecord } from './org_store.ts';
import type { ScimTokenRecord } from './scim_store.ts';

const SCIM_TOKEN_PREFIX = 'lks_';
/** `lks_<16 hex>_<43 base64url>`: the public prefix, then the 32-byte secret. */
const SCIM_TOKEN = /^(lks_[0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;

/** The public form of a SCIM token (never its secret or digest). */
export interface PublicScimToken {
  id: string;
  organization_id: string;
  prefix: string;
  description: string;
  created_at: number;
  created_by: string;
  last_used_at?: number;
  revoked_at?: number;
}

function publicScimToken(r: ScimTokenRecord): PublicScimToken {
  return {
    id: r.id,
    organization_id: r.organization_id,
    prefix: r.prefix,
    description: r.description,
    created_at: r.created_at,
    created_by: r.created_by,
    ...(r.last_used_at === null ? {} : { last_used_at: r.last_used_at }),
    ...(r.revoked_at === null ? {} : { revoked_at: r.revoked_at }),
  };
}

/** The SCIM token operations. */
export class OrgScimTokens {
  readonly #c: OrgCore;

  constructor(core: OrgCore) {
    this.#c = core;
  }

  /**
   * `create_scim_token` (`can_update`): a bearer token for the organization's
   * SCIM endpoint (`/scim/v2`), answered once; only its prefix and digest are
   * kept.
   */
  async createScimToken(call: OrgCall, input: { organization_id: string; description?: string | undefined }): Promise<PublicScimToken & { token: string }> {
    const org = await this.#c.live(input.organization_id);
    await this.#c.require(call, org.id, 'can_update');
    const description = (input.description ?? '').trim();
    if (description.length > 256) throw invalid('description must be at most 256 characters', 'invalid_description');
    const prefix = `${SCIM_TOKEN_PREFIX}${randomBytes(8).toString('hex')}`;
    const token = `${prefix}_${randomBytes(32).toString('base64url')}`;
    const rec: ScimTokenRecord & { secret_hash: string } = {
      id: randomUUID(), organization_id: org.id, prefix, secret_hash: digest(token), description,
      created_at: this.#c.o.nowSeconds(), created_by: call.actor.kind === 'user' ? call.actor.userId : 'super_admin', last_used_at: null, revoked_at: null,
    };
    await this.#c.change(async (tx) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      await this.#c.o.scim.insertToken(rec, tx);
      await this.#c.record(call, tx, { action: 'organization.scim_token_created', resourceType: 'scim_token', resourceId: rec.id, data: { organization_id: org.id, token_id: rec.id, prefix } });
    });
    return { ...publicScimToken(rec), token };
  }

  /** `scim_tokens` (`can_update`): the organization's tokens, newest first, revoked ones included (never a secret). */
  async scimTokens(call: OrgCall, input: { organization_id: string; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) {
    const org = await this.#c.live(input.organization_id);
    await this.#c.require(call, org.id, 'can_update');
    const p = page(input.pagination);
    const r = await this.#c.o.scim.listTokens({ organizationId: org.id, offset: p.offset, limit: p.limit });
    return { tokens: r.tokens.map(publicScimToken), pagination: { ...p, total: r.total } };
  }

  /** `revoke_scim_token` (`can_update` on the token's organization): the next SCIM request with it is refused. */
  async revokeScimToken(call: OrgCall, input: { token_id: string }): Promise<{ message: string }> {
    const rec = typeof input.token_id === 'string' && input.token_id !== '' ? await this.#c.o.scim.token(input.token_id) : undefined;
    if (rec === undefined) throw new LatchkeyError('not_found', 'SCIM token not found', { reason: 'scim_token_not_found' });
    await this.#c.require(call, rec.organization_id, 'can_update');
    await this.#c.change(async (tx) => {
      if (!(await this.#c.o.scim.revokeToken(rec.id, this.#c.o.nowSeconds(), tx))) throw new LatchkeyError('failed_precondition', 'the SCIM token is revoked already', { reason: 'scim_token_revoked' });
      await this.#c.record(call, tx, { action: 'organization.scim_token_revoked', resourceType: 'scim_token', resourceId: rec.id, data: { organization_id: rec.organization_id, token_id: rec.id, prefix: rec.prefix } });
    });
    return { message: 'SCIM token revoked' };
  }

  /**
   * The live organization a SCIM bearer token belongs to, or undefined for a
   * token that is malformed, unknown, revoked, or of a deleted organization
   * (the caller answers 401 alike, telling none from another).
   */
  async authenticateScimToken(token: string): Promise<{ org: OrgRecord; tokenId: string } | undefined> {
    const m = SCIM_TOKEN.exec(token);
    if (m === null) return undefined;
    const rec = await this.#c.o.scim.tokenByPrefix(m[1]!);
    if (rec === undefined || rec.revoked_at !== null) return undefined;
    const want = Buffer.from(rec.secret_hash, 'hex');
    const got = createHash('sha256').update(token).digest();
    if (want.length !== got.length || !timingSafeEqual(want, got)) return undefined;
    const org = await this.#c.o.store.organization(rec.organization_id);
    if (org === undefined) return undefined;
    await this.#c.o.scim.touch(rec.id, this.#c.o.nowSeconds());
    return { org, tokenId: rec.id };
  }
}
