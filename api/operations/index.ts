/**
 * The operations table: every API operation, declared once.
 *
 * Each area keeps its rows in its own file. To add an area: create the file
 * exporting a list of rows, import it here and add it to `OPERATIONS`, then
 * give every new row its handler in `server/handlers/` (the handlers' record
 * is typed over the row names, so a row without a handler fails the type
 * check). No transport needs an edit.
 */
import { checkTable } from './types.ts';
import { META_OPERATIONS } from './meta.ts';
import { ADMIN_OPERATIONS } from './admin.ts';
import { AUTH_OPERATIONS } from './auth.ts';
import { ACCOUNT_OPERATIONS } from './account.ts';
import { MFA_OPERATIONS } from './mfa.ts';
import { PERMISSION_OPERATIONS } from './permissions.ts';
import { VERIFICATION_OPERATIONS } from './verification.ts';
import { ORGANIZATION_OPERATIONS } from './organizations.ts';
import { PASSKEY_OPERATIONS } from './passkeys.ts';
import { REGISTRY_OPERATIONS } from './clients.ts';
import { SSO_OPERATIONS } from './sso.ts';

/** Any row of the table, with its own name and shapes. */
export type OperationRow =
  | (typeof META_OPERATIONS)[number]
  | (typeof AUTH_OPERATIONS)[number]
  | (typeof ACCOUNT_OPERATIONS)[number]
  | (typeof MFA_OPERATIONS)[number]
  | (typeof PASSKEY_OPERATIONS)[number]
  | (typeof VERIFICATION_OPERATIONS)[number]
  | (typeof PERMISSION_OPERATIONS)[number]
  | (typeof ADMIN_OPERATIONS)[number]
  | (typeof ORGANIZATION_OPERATIONS)[number]
  | (typeof REGISTRY_OPERATIONS)[number]
  | (typeof SSO_OPERATIONS)[number];

/** The wire names of every operation. */
export type OperationName = OperationRow['name'];

export const OPERATIONS: readonly OperationRow[] = checkTable<OperationRow>([
  ...META_OPERATIONS,
  ...AUTH_OPERATIONS,
  ...ACCOUNT_OPERATIONS,
  ...MFA_OPERATIONS,
  ...PASSKEY_OPERATIONS,
  ...VERIFICATION_OPERATIONS,
  ...PERMISSION_OPERATIONS,
  ...ADMIN_OPERATIONS,
  ...ORGANIZATION_OPERATIONS,
  ...REGISTRY_OPERATIONS,
  ...SSO_OPERATIONS,
]);

export { META_OPERATIONS, AUTH_OPERATIONS, ACCOUNT_OPERATIONS, MFA_OPERATIONS, PASSKEY_OPERATIONS, VERIFICATION_OPERATIONS, PERMISSION_OPERATIONS, ADMIN_OPERATIONS, ORGANIZATION_OPERATIONS, REGISTRY_OPERATIONS, SSO_OPERATIONS };
export { CLIENT, API_KEY } from './clients.ts';
export { ALL_PROTOCOLS, defineOperation, graphqlName, graphqlArg, grpcService, checkTable } from './types.ts';
export type { AnyOperation, Operation, OperationAuth, Protocol } from './types.ts';
export { META } from './meta.ts';
export { AUTH_RESPONSE, REQUIRED_RELATION } from './auth.ts';
export { PASSKEY } from './passkeys.ts';
export { SESSION_INFO } from './account.ts';
export * from './admin_shapes.ts';
