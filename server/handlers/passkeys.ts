/**
 * The passkey operations (api/operations/passkeys.ts): ceremonies for
 * sign-up, sign-in, the second factor and adding a passkey; a user's own
 * list, rename and delete; an admin's list and revoke. Registrations,
 * sign-ins and removals go to the audit log and to the webhooks
 * (`user.passkey_registered`, `user.login`, `user.passkey_revoked`, and
 * `user.signup` for a passkey sign-up); a refused sign-in is audited
 * by the identity service with its precise reason (a signature counter that
 * went backwards among them).
 */
import { LatchkeyError } from '../../engine/errors.ts';
import { toPublicPasskey } from '../../auth/index.ts';
import { PASSKEY_OPERATIONS } from '../../api/index.ts';
import type { RequestContext } from '../context.ts';
import { audit, authOf, clearMfaCookie, setSessionCookies } from './auth.ts';
import { userEventRecorder } from './admin.ts';
import { linkBase, linkDelivery } from './link_mail.ts';
import { auditedCallContext, callContext } from './services_of.ts';
import type { HandlersOf } from './types.ts';

const callerId = (ctx: RequestContext): string | undefined => (ctx.principal.kind === 'user' ? ctx.principal.userId : undefined);

const passkeyMetadata = (p: { id: string; name: string; aaguid: string; backup_eligible: boolean }): Record<string, unknown> => ({
  passkey_id: p.id,
  name: p.name,
  aaguid: p.aaguid,
  backup_eligible: p.backup_eligible,
});

export const PASSKEY_HANDLERS: HandlersOf<typeof PASSKEY_OPERATIONS> = {
  passkey_signup_options: async (ctx, input) => (await authOf(ctx).passkeys.signupOptions(input)) as never,
  passkey_signup: async (ctx, input) => {
    const auth = authOf(ctx);
    const verify = auth.options.enableEmailVerification && auth.passkeys.enabled ? linkDelivery(ctx, linkBase(ctx, input.redirect_uri, 'verify'), input.state) : undefined;
    // The audit row and the webhook deliveries commit with the user and its passkey (security matrix E3).
    const record = userEventRecorder(ctx, 'user.signup', { webhook: 'user.signup', metadata: { passkey: true } });
    const result = await auth.passkeys.signup(input, callContext(ctx), verify, record);
    if (result.passkey !== undefined && result.record !== undefined) {
      await audit(ctx, 'passkey.registered', { userId: result.record.id, user: result.record, webhook: 'user.passkey_registered', metadata: passkeyMetadata(result.passkey) });
    }
    if (result.session !== undefined) await audit(ctx, 'user.login_success', { userId: result.record?.id, user: result.record, webhook: 'user.login', metadata: { passkey: true } });
    setSessionCookies(ctx, result);
    return result.response as never;
  },
  passkey_login_options: async (ctx, input) => (await authOf(ctx).passkeys.loginOptions(input)) as never,
  passkey_login: async (ctx, input) => {
    const result = await authOf(ctx).passkeyLogin(input, auditedCallContext(ctx));
    await audit(ctx, 'user.login_success', { userId: result.record?.id, user: result.record, webhook: 'user.login', metadata: { passkey: true } });
    setSessionCookies(ctx, result);
    return result.response as never;
  },
  verify_passkey: async (ctx, input) => {
    const result = await authOf(ctx).verifyPasskey(input, auditedCallContext(ctx));
    await audit(ctx, 'user.login_success', { userId: result.record?.id, user: result.record, webhook: 'user.login', metadata: { mfa_method: 'passkey', passkey_id: result.passkey.id } });
    clearMfaCookie(ctx);
    setSessionCookies(ctx, result);
    return result.response as never;
  },
  passkey_registration_options: async (ctx) => (await authOf(ctx).passkeys.registrationOptions(callContext(ctx))) as never,
  add_passkey: async (ctx, input) => {
    const passkey = await authOf(ctx).passkeys.register(input, callContext(ctx));
    await audit(ctx, 'passkey.registered', { userId: passkey.user_id, webhook: 'user.passkey_registered', metadata: passkeyMetadata(passkey) });
    return toPublicPasskey(passkey) as never;
  },
  passkeys: async (ctx) => ({ passkeys: (await authOf(ctx).passkeys.list(callContext(ctx))).map(toPublicPasskey) }) as never,
  rename_passkey: async (ctx, input) => toPublicPasskey(await authOf(ctx).passkeys.rename(input, callContext(ctx))) as never,
  delete_passkey: async (ctx, input) => {
    const removed = await authOf(ctx).passkeys.remove(input, callContext(ctx));
    await audit(ctx, 'passkey.deleted', { userId: callerId(ctx), webhook: 'user.passkey_revoked', metadata: passkeyMetadata(removed) });
    return { message: 'Passkey deleted successfully' };
  },
  passkey_step_up_options: async (ctx) => (await authOf(ctx).passkeys.stepUpOptions(callContext(ctx))) as never,
  passkey_step_up: async (ctx, input) => {
    const passkey = await authOf(ctx).passkeys.stepUp(input, callContext(ctx));
    await audit(ctx, 'passkey.step_up', { userId: passkey.user_id, metadata: { passkey_id: passkey.id } });
    return { message: 'Confirmed with your passkey. The next sensitive change of this session within 5 minutes may go ahead.' };
  },
  user_passkeys: async (ctx, input) => {
    const auth = authOf(ctx);
    if ((await auth.users.findById(input.user_id)) === undefined) throw new LatchkeyError('not_found', 'user not found', { reason: 'user_not_found' });
    return { passkeys: (await auth.passkeys.listFor(input.user_id)).map(toPublicPasskey) } as never;
  },
  revoke_user_passkey: async (ctx, input) => {
    const auth = authOf(ctx);
    const user = await auth.users.findById(input.user_id);
    if (user === undefined) throw new LatchkeyError('not_found', 'user not found', { reason: 'user_not_found' });
    const removed = await auth.passkeys.revoke(input.user_id, input.id);
    await audit(ctx, 'passkey.revoked', { user, webhook: 'user.passkey_revoked', metadata: { ...passkeyMetadata(removed), by: 'admin' } });
    return { message: 'Passkey revoked successfully' };
  },
};
