/**
 * The SSO connection operations (api/operations/sso.ts) and their
 * super-admin variants, which share a handler: the connection service
 * (auth/sso_connections.ts) authorizes by the call's actor, and records each
 * change's audit row in the change's transaction (actions
 * `organization.sso_connection_added`, `…_updated`, `…_deleted`).
 */
import { LatchkeyError } from '../../engine/errors.ts';
import type { ConnectionInput, SsoService } from '../../auth/index.ts';
import { SSO_OPERATIONS } from '../../api/index.ts';
import type { RequestContext } from '../context.ts';
import { orgCall } from './organizations.ts';
import type { HandlersOf } from './types.ts';

/** The connection service; `failed_precondition` (`organizations_unavailable`) without organizations. */
function ssoOf(ctx: RequestContext): SsoService {
  const s = ctx.services.sso?.connections;
  if (s === undefined) throw new LatchkeyError('failed_precondition', 'SSO connections need organizations on a SQL main database', { reason: 'organizations_unavailable' });
  return s;
}

type Page = { page?: number | undefined; limit?: number | undefined } | undefined;

const USER_HANDLERS = {
  add_sso_connection: (ctx: RequestContext, input: ConnectionInput & { organization_id: string; type: string }) => ssoOf(ctx).add(orgCall(ctx), input),
  sso_connections: (ctx: RequestContext, input: { organization_id: string; pagination?: Page }) => ssoOf(ctx).list(orgCall(ctx), input),
  sso_connection: (ctx: RequestContext, input: { connection_id: string }) => ssoOf(ctx).get(orgCall(ctx), input.connection_id),
  update_sso_connection: (ctx: RequestContext, input: ConnectionInput & { connection_id: string }) => ssoOf(ctx).update(orgCall(ctx), input),
  delete_sso_connection: (ctx: RequestContext, input: { connection_id: string }) => ssoOf(ctx).delete(orgCall(ctx), input.connection_id),
};

type UserName = keyof typeof USER_HANDLERS;

const ADMIN_HANDLERS = Object.fromEntries(Object.entries(USER_HANDLERS).map(([name, h]) => [`admin_${name}`, h])) as { [K in UserName as `admin_${K}`]: (typeof USER_HANDLERS)[K] };

export const SSO_HANDLERS: HandlersOf<typeof SSO_OPERATIONS> = {
  ...USER_HANDLERS,
  ...ADMIN_HANDLERS,
};
