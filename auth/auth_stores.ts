/**
 * The identity stores on the main database: SQL (the identity migrations
 * run first) or DynamoDB (missing tables are created). Each store has its
 * interface beside its SQL implementation.
 */
import { DynamoMfaStore, DynamoUserStore, DynamoVerificationStore } from './dynamo_auth_stores.ts';
import type { MainDatabase } from './main_database.ts';
import { SqlMfaStore, type MfaStore } from './mfa_store.ts';
import { DynamoProviderIdentityStore, SqlProviderIdentityStore, type ProviderIdentityStore } from './provider_identity_store.ts';
import { DynamoPasskeyStore, SqlPasskeyStore, type PasskeyStore } from './passkey_store.ts';
import { SqlUserStore } from './user_store.ts';
import type { UserStore } from './user_store_types.ts';
import { SqlVerificationStore, type VerificationStore } from './verification.ts';

/** Every identity store, on one main database. */
export interface AuthStores {
  readonly users: UserStore;
  readonly verifications: VerificationStore;
  readonly mfa: MfaStore;
  readonly passkeys: PasskeyStore;
  /** The provider accounts linked to users (social login, the account center). */
  readonly identities: ProviderIdentityStore;
}

/** Opens (creating or migrating the schema of) the identity stores on `database`. */
export async function openAuthStores(database: MainDatabase, nowSeconds: () => number): Promise<AuthStores> {
  const stores: AuthStores =
    database.kind === 'sql'
      ? {
          users: new SqlUserStore({ sequelize: database.sequelize, nowSeconds }),
          verifications: new SqlVerificationStore({ sequelize: database.sequelize, nowSeconds }),
          mfa: new SqlMfaStore({ sequelize: database.sequelize, nowSeconds }),
          passkeys: new SqlPasskeyStore({ sequelize: database.sequelize, nowSeconds }),
          identities: new SqlProviderIdentityStore({ sequelize: database.sequelize, nowSeconds }),
        }
      : {
          users: new DynamoUserStore({ db: database.dynamo, nowSeconds }),
          verifications: new DynamoVerificationStore({ db: database.dynamo, nowSeconds }),
          mfa: new DynamoMfaStore({ db: database.dynamo, nowSeconds }),
          passkeys: new DynamoPasskeyStore({ db: database.dynamo, nowSeconds }),
          identities: new DynamoProviderIdentityStore({ db: database.dynamo, nowSeconds }),
        };
  // In order, as the migrations of one connection run one after another.
  await stores.users.init();
  await stores.verifications.init();
  await stores.mfa.init();
  await stores.passkeys.init();
  await stores.identities.init();
  return stores;
}
