/**
 * The account center's operations: the caller's sessions (`list_sessions`,
 * `revoke_session`) and sign-in methods (`linked_identities`,
 * `unlink_identity`), and the super-admin's view of any user's sessions
 * (`_list_sessions`, `_revoke_session`).
 */
import { socialProviderTable, type SocialLoginProvider } from '../../auth/index.ts';
import { ACCOUNT_OPERATIONS } from '../../api/index.ts';
import type { RequestContext } from '../context.ts';
import { LatchkeyError } from '../../engine/errors.ts';
import { audit, authOf, callContext, clearSessionCookies } from './auth.ts';
import type { HandlersOf } from './types.ts';

const PROVIDER_NAMES: Readonly<Record<string, string>> = Object.fromEntries(
  Object.values(socialProviderTable()).map((row) => [row.name, row.displayName]),
);

/** The provider as shown to users: its brand name, or `--oidc-display-name` for the generic OpenID provider. */
function displayNameOf(ctx: RequestContext, provider: SocialLoginProvider): string {
  if (provider === 'oidc') return ctx.services.config.oidcDisplayName || 'OpenID Connect';
  return PROVIDER_NAMES[provider] ?? provider;
}

/** The caller's user id (the operations here are `auth: 'user'`, so the pipeline has authenticated one). */
function requireUserId(ctx: RequestContext): string {
  if (ctx.principal.kind !== 'user') throw new LatchkeyError('unauthenticated', 'sign in first', { reason: 'unauthenticated' });
  return ctx.principal.userId;
}

const currentSid = (ctx: RequestContext): string | undefined => (ctx.principal.kind === 'user' ? ctx.principal.sessionId : undefined);

/** Records an admin action on a user's sessions in the audit log (never fails the call). */
async function adminAudit(ctx: RequestContext, action: string, userId: string, metadata: Record<string, unknown>): Promise<void> {
  const admin = ctx.services.admin;
  if (admin === undefined) return;
  try {
    await admin.audit.record({
      actor_type: 'admin',
      actor_id: 'super_admin',
      action,
      resource_type: 'user',
      resource_id: userId,
      ip_address: ctx.clientIp,
      user_agent: ctx.userAgent,
      metadata: { ...metadata, protocol: ctx.protocol, ...(ctx.principal.kind === 'super_admin' ? { via: ctx.principal.via } : {}) },
    });
  } catch (err) {
    ctx.logger.error('admin event not recorded', { action, err });
  }
}

export const ACCOUNT_HANDLERS: HandlersOf<typeof ACCOUNT_OPERATIONS> = {
  list_sessions: async (ctx) => ({ sessions: await authOf(ctx).listSessions(callContext(ctx)) }),
  revoke_session: async (ctx, input) => {
    const revoked = await authOf(ctx).revokeSession(input, callContext(ctx));
    const userId = ctx.principal.kind === 'user' ? ctx.principal.userId : undefined;
    await audit(ctx, 'user.session_revoked', { userId, metadata: input.all_others === true ? { all_others: true, revoked } : { session_id: input.id } });
    // Ending the session of this very call signs the browser out, as logout does.
    if (input.id !== undefined && input.id === currentSid(ctx)) clearSessionCookies(ctx);
    return { message: revoked === 1 ? 'Session ended' : `${revoked} sessions ended`, revoked };
  },
  linked_identities: async (ctx) => {
    const { identities, has_password } = await authOf(ctx).linkedIdentities(callContext(ctx));
    return {
      identities: identities.map((i) => ({
        provider: i.provider,
        display_name: displayNameOf(ctx, i.provider),
        ...(i.email === null ? {} : { email: i.email }),
        ...(i.linked_at === null ? {} : { linked_at: i.linked_at }),
      })),
      has_password,
    };
  },
  unlink_identity: async (ctx, input) => {
    const user = await authOf(ctx).unlinkIdentity(input.provider, callContext(ctx));
    await audit(ctx, 'user.identity_unlinked', { userId: user.id, user, metadata: { provider: input.provider } });
    return { message: `${displayNameOf(ctx, input.provider as SocialLoginProvider)} unlinked` };
  },
  consented_apps: async (ctx) => {
    const userId = requireUserId(ctx);
    const grants = (await ctx.services.consent?.list(userId)) ?? [];
    const apps = await Promise.all(
      grants.map(async (g) => {
        const client = await ctx.services.oauth?.registry.find(g.client_id);
        return { client_id: g.client_id, client_name: client?.record.client_name || g.client_id, scopes: g.scopes, granted_at: g.created_at };
      }),
    );
    return { apps };
  },
  revoke_consent: async (ctx, input) => {
    const userId = requireUserId(ctx);
    const scopes = ((await ctx.services.consent?.list(userId)) ?? []).find((g) => g.client_id === input.client_id)?.scopes ?? [];
    if (!(await ctx.services.consent?.revoke(userId, input.client_id))) throw new LatchkeyError('not_found', 'no consent to this client', { reason: 'consent_not_found' });
    await audit(ctx, 'user.consent_revoked', { userId, metadata: { client_id: input.client_id, scopes } });
    return { message: 'Access withdrawn' };
  },
  admin_list_sessions: async (ctx, input) => ({ sessions: await authOf(ctx).listSessionsOf(input.user_id) }),
  admin_revoke_session: async (ctx, input) => {
    const userId = await authOf(ctx).revokeAnySession(input.id);
    await adminAudit(ctx, 'admin.session_revoked', userId, { session_id: input.id });
    return { message: 'Session ended', revoked: 1 };
  },
};
