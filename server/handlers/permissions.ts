/**
 * The handlers of the permission operations (spec: POST /v1/check_permissions, POST
 * /v1/list_permissions): the caller's own relationship checks through the FGA
 * engine, over GraphQL, REST and gRPC alike.
 *
 * Order of refusals: 401 `unauthenticated` without credentials (before
 * anything else), 400 `invalid_argument` for a malformed request (1 to 100
 * checks), 403 `permission_denied` for a `user` that is neither the caller
 * nor asked by a super-admin, 400 `failed_precondition` ("fga is not enabled
 * on this server") without an FGA store.
 */
import { LatchkeyError } from '../../engine/errors.ts';
import { authOf, callContext } from './auth.ts';
import { PERMISSION_OPERATIONS } from '../../api/index.ts';
import type { HandlersOf } from './types.ts';


export const PERMISSION_HANDLERS: HandlersOf<typeof PERMISSION_OPERATIONS> = {
  // Not async: an answer at hand (a cache hit) goes back to the pipeline without a promise.
  check_permissions: (ctx, input) => authOf(ctx).checkPermissions(input, callContext(ctx)),
  explain_permission: async (ctx, input) => {
    // An explanation shows the tuples a check read, beyond what a check's answer tells: users get it only when the operator allows it.
    if (!ctx.services.config.enableExplainPermission && ctx.principal.kind !== 'super_admin') {
      throw new LatchkeyError('failed_precondition', 'explain_permission is not enabled on this server (--enable-explain-permission)', { reason: 'explain_permission_disabled' });
    }
    return authOf(ctx).explainPermission(input, callContext(ctx));
  },
  list_permissions: async (ctx, input) => authOf(ctx).listPermissions(input, callContext(ctx)),
  list_relations: async (ctx, input) => authOf(ctx).listRelations(input, callContext(ctx)),
};
