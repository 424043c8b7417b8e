/**
 * The operations table: every API operation, declared once.
 *
 * Each area keeps its rows in its own file. To add an area: create the file
 * exporting a list of rows, import it here and spread it into `OPERATIONS`.
 * No transport needs an edit.
 */
import { checkTable, type AnyOperation } from './types.ts';
import { META_OPERATIONS } from '../../server/handlers/meta.ts';
import { ADMIN_OPERATIONS } from '../../server/handlers/admin.ts';
import { AUTH_OPERATIONS } from '../../server/handlers/auth.ts';
import { MFA_OPERATIONS } from '../../server/handlers/mfa.ts';
import { PERMISSION_OPERATIONS } from '../../server/handlers/permissions.ts';
import { VERIFICATION_OPERATIONS } from '../../server/handlers/verification.ts';

export const OPERATIONS: readonly AnyOperation[] = checkTable([
  ...META_OPERATIONS,
  ...AUTH_OPERATIONS,
  ...MFA_OPERATIONS,
  ...VERIFICATION_OPERATIONS,
  ...PERMISSION_OPERATIONS,
  ...ADMIN_OPERATIONS,
]);

export { ALL_PROTOCOLS, defineOperation, graphqlName, grpcService, checkTable } from './types.ts';
export type { AnyOperation, Operation, OperationAuth } from './types.ts';
export { META, metaFromConfig, DEPRECATED_MESSAGES } from '../../server/handlers/meta.ts';
