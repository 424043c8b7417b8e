/**
 * Every operation's handler, in one record typed over the rows' names
 * (`Handlers`): the pipeline finds a row's handler here by its name. The
 * composition root never imports this file; the process entry hands the
 * record to the pipeline.
 */
import type { Handlers } from './types.ts';
import { META_HANDLERS } from './meta.ts';
import { AUTH_HANDLERS } from './auth.ts';
import { ACCOUNT_HANDLERS } from './account.ts';
import { MFA_HANDLERS } from './mfa.ts';
import { PASSKEY_HANDLERS } from './passkeys.ts';
import { VERIFICATION_HANDLERS } from './verification.ts';
import { PERMISSION_HANDLERS } from './permissions.ts';
import { ADMIN_HANDLERS } from './admin.ts';
import { ORGANIZATION_HANDLERS } from './organizations.ts';
import { REGISTRY_HANDLERS } from './clients.ts';
import { SSO_HANDLERS } from './sso.ts';

export const HANDLERS: Handlers = Object.freeze({
  ...META_HANDLERS,
  ...AUTH_HANDLERS,
  ...ACCOUNT_HANDLERS,
  ...MFA_HANDLERS,
  ...PASSKEY_HANDLERS,
  ...VERIFICATION_HANDLERS,
  ...PERMISSION_HANDLERS,
  ...ADMIN_HANDLERS,
  ...ORGANIZATION_HANDLERS,
  ...REGISTRY_HANDLERS,
  ...SSO_HANDLERS,
});

export type { AnyHandler, Handler, Handlers, HandlersOf, ServedOperation } from './types.ts';
export { handlerOf, defineServedOperation } from './types.ts';
