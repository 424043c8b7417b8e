/**
 * The client registry's and the API keys' operations: the registry is the
 * OAuth provider's (`services.oauth.registry`); every change is audited
 * (without secrets) through the admin service.
 */
import { LatchkeyError } from '../../engine/errors.ts';
import { normalizePagination } from '../../admin/index.ts';
import type { ClientInput, ClientRegistry, PublicApiKey } from '../../auth/index.ts';
import { REGISTRY_OPERATIONS } from '../../api/index.ts';
import type { RequestContext } from '../context.ts';
import { apiKeyScopesFor } from '../api_key_scopes.ts';
import type { HandlersOf } from './types.ts';
import { authOf } from './services_of.ts';

/** The client registry of a running server; `unavailable` without the OAuth provider. */
function registryOf(ctx: RequestContext): ClientRegistry {
  const r = ctx.services.oauth?.registry;
  if (r === undefined) throw new LatchkeyError('unavailable', 'the OAuth provider is not available', { reason: 'auth_unavailable' });
  return r;
}

/** Records an administrative change of the registry or of API keys. Never throws. */
async function auditChange(ctx: RequestContext, action: string, resourceType: string, resourceId: string, metadata: Record<string, unknown> = {}): Promise<void> {
  const admin = ctx.services.admin;
  if (admin === undefined) return;
  const p = ctx.principal;
  const actor = p.kind === 'super_admin' ? { actor_type: 'admin' as const, actor_id: '' } : p.kind === 'user' ? { actor_type: 'user' as const, actor_id: p.userId } : p.kind === 'service_account' ? { actor_type: 'system' as const, actor_id: p.subject } : { actor_type: 'anonymous' as const, actor_id: '' };
  await admin.userEvent(
    { ...actor, action, resource_type: resourceType, resource_id: resourceId, ip_address: ctx.clientIp, user_agent: ctx.userAgent, metadata: { ...metadata, protocol: ctx.protocol } },
    undefined,
    (err) => ctx.logger.error('registry event not recorded', { action, err }),
  );
}

/** The principal an own-key operation is about: the calling user or service account. */
function selfOf(ctx: RequestContext): string {
  const p = ctx.principal;
  if (p.kind === 'user' || p.kind === 'service_account') return p.subject;
  throw new LatchkeyError('failed_precondition', 'a super-admin has no API keys of its own; use _create_api_key, _api_keys and _revoke_api_key with a principal', { reason: 'no_own_api_keys' });
}

/** A principal an admin names: `user:<id>` of an existing user, or `service_account:<client_id>` of a registered service account. */
async function existingPrincipal(ctx: RequestContext, principal: string): Promise<string> {
  const bad = (): LatchkeyError => new LatchkeyError('not_found', `principal ${principal} not found`, { reason: 'principal_not_found' });
  if (principal.startsWith('user:')) {
    const user = await authOf(ctx).users.findById(principal.slice(5));
    if (user === undefined) throw bad();
    return `user:${user.id}`;
  }
  if (principal.startsWith('service_account:')) {
    const client = await registryOf(ctx).find(principal.slice(16));
    if (client === undefined || client.fromFlags || client.record.kind !== 'service_account') throw bad();
    return principal;
  }
  throw new LatchkeyError('invalid_argument', 'principal must be user:<id> or service_account:<client_id>', { reason: 'invalid_principal' });
}

const keys = (list: PublicApiKey[]): { api_keys: never } => ({ api_keys: list as never });

export const REGISTRY_HANDLERS: HandlersOf<typeof REGISTRY_OPERATIONS> = {
  add_client: async (ctx, input) => {
    const out = await registryOf(ctx).add(input as ClientInput);
    await auditChange(ctx, 'admin.client_added', 'client', out.client.client_id, { kind: out.client.kind });
    return out as never;
  },
  clients: async (ctx, input) => {
    const p = normalizePagination(input.pagination);
    const out = await registryOf(ctx).list({ offset: p.offset, limit: p.limit });
    return { clients: out.clients, pagination: { ...p, total: out.total } } as never;
  },
  client: async (ctx, input) => (await registryOf(ctx).get(input.client_id)) as never,
  update_client: async (ctx, input) => {
    const { client_id, ...rest } = input;
    const out = await registryOf(ctx).update(client_id, rest as ClientInput);
    await auditChange(ctx, 'admin.client_updated', 'client', client_id, { fields: Object.keys(rest) });
    return out as never;
  },
  delete_client: async (ctx, input) => {
    await registryOf(ctx).delete(input.client_id);
    await auditChange(ctx, 'admin.client_deleted', 'client', input.client_id);
    return { message: 'client deleted' };
  },
  rotate_client_secret: async (ctx, input) => {
    const out = await registryOf(ctx).rotateSecret(input.client_id, input.overlap_seconds ?? undefined);
    await auditChange(ctx, 'admin.client_secret_rotated', 'client', input.client_id, { overlap_seconds: input.overlap_seconds ?? 86400 });
    return out as never;
  },
  create_api_key: async (ctx, input) => {
    const principal = selfOf(ctx);
    const out = await registryOf(ctx).apiKeys.create(principal, { ...input, scopes: apiKeyScopesFor(input.scopes, ctx.principal) });
    await auditChange(ctx, 'api_key.created', 'api_key', out.key.id, { principal });
    return out as never;
  },
  api_keys: async (ctx) => keys(await registryOf(ctx).apiKeys.list(selfOf(ctx))),
  revoke_api_key: async (ctx, input) => {
    const principal = selfOf(ctx);
    await registryOf(ctx).apiKeys.revoke(principal, input.id);
    await auditChange(ctx, 'api_key.revoked', 'api_key', input.id, { principal });
    return { message: 'API key revoked' };
  },
  admin_create_api_key: async (ctx, input) => {
    const { principal: named, ...rest } = input;
    const principal = await existingPrincipal(ctx, named);
    const out = await registryOf(ctx).apiKeys.create(principal, { ...rest, scopes: apiKeyScopesFor(rest.scopes, undefined) });
    await auditChange(ctx, 'admin.api_key_created', 'api_key', out.key.id, { principal });
    return out as never;
  },
  admin_api_keys: async (ctx, input) => keys(await registryOf(ctx).apiKeys.list(await existingPrincipal(ctx, input.principal))),
  admin_revoke_api_key: async (ctx, input) => {
    const registry = registryOf(ctx);
    const id = input.id.startsWith('lk_') ? input.id.slice(3, 19) : input.id;
    const key = await registry.store.getApiKey(id);
    if (key === undefined) throw new LatchkeyError('not_found', 'API key not found', { reason: 'api_key_not_found' });
    await registry.apiKeys.revoke(key.principal, id);
    await auditChange(ctx, 'admin.api_key_revoked', 'api_key', id, { principal: key.principal });
    return { message: 'API key revoked' };
  },
};
