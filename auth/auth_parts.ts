/**
 * The assembly of the identity service: the stores opened on the main
 * database, and the flows built over them and wired to each other (email
 * flows that open sessions, passkey flows that ask for a second factor,
 * organizations on a SQL main database).
 *
 * Apart from `auth_service.ts` because the order of construction and the
 * callbacks that tie one flow to another are a concern of their own: the
 * service is the one surface the transports call, and reads as the list of
 * operations it delegates, whatever it took to build the parts behind them.
 */
import { resolveTxt as dnsResolveTxt } from 'node:dns/promises';
import { LatchkeyError } from '../engine/errors.ts';
import type { Engine } from '../engine/index.ts';
import type { SqlDatabase } from '../engine/sql/sql_database.ts';
import { AccountSessions } from './account_sessions.ts';
import { openAuthStores } from './auth_stores.ts';
import { EmailFlows } from './email_flows.ts';
import { LoginFlows, signupRoles } from './login_flows.ts';
import { sqlDatabase, type MainDatabase } from './main_database.ts';
import type { MemoryStore } from './memory_store.ts';
import { MfaFlows, type OtpDelivery } from './mfa.ts';
import type { ResolvedAuthOptions } from './options.ts';
import { OrganizationService, type OrgTuples, type TxtResolver } from './organizations.ts';
import { SqlOrgStore } from './org_store.ts';
import { PasskeyFlows } from './passkey_flows.ts';
import { PasswordHasher } from './password.ts';
import { Permissions, type PermissionEngine } from './permissions.ts';
import type { ProviderIdentityStore } from './provider_identity_store.ts';
import { SqlScimStore } from './scim_store.ts';
import { requestedRoles, SessionFlows } from './session_flows.ts';
import { SessionManager } from './sessions.ts';
import type { TokenScript } from './token_script.ts';
import { TokenService } from './tokens.ts';
import type { UserStore } from './user_store_types.ts';
import { VerificationFlows } from './verification_flows.ts';
import { RelyingParty } from './webauthn.ts';

/** Dependencies of `AuthService`. */
export interface AuthDependencies {
  /** The SQL main database; ignored when `database` is given. */
  sequelize?: SqlDatabase | undefined;
  /** The main database (SQL or DynamoDB); default: `sequelize`. */
  database?: MainDatabase | undefined;
  memoryStore: MemoryStore;
  /** The FGA engine, or undefined when FGA is not enabled. */
  engine?: PermissionEngine | undefined;
  /** How email and SMS one-time codes reach users (the channels that are configured). */
  otpDelivery?: OtpDelivery | undefined;
  /** `--custom-access-token-script`, compiled: its claims go into every access and id token. */
  tokenScript?: TokenScript | undefined;
  /** Organizations (SQL main databases only; see `OrganizationService`). */
  organizations?: OrganizationDependencies | undefined;
}

/** What the organization service needs besides the identity stores. */
export interface OrganizationDependencies {
  /** The FGA engine (read when called, so a late-plugged engine is seen). */
  engine: () => Engine | undefined;
  /** The tuple writer on the main connection; undefined when the FGA store lives elsewhere. */
  tuples: () => OrgTuples | undefined;
  /** `--organization-roles`. */
  customRoles: readonly string[];
  /** `--organization-invitation-ttl`, seconds. */
  invitationTtlSeconds: number;
  /** DNS TXT lookups (default: the system resolver). */
  resolveTxt?: TxtResolver | undefined;
}

/** The parts an `AuthService` is made of, built and wired by {@link buildAuthParts}. */
export interface AuthParts {
  options: ResolvedAuthOptions;
  users: UserStore;
  sessions: SessionManager;
  tokens: TokenService;
  passwords: PasswordHasher;
  mfa: MfaFlows;
  permissions: Permissions;
  verification: VerificationFlows;
  email: EmailFlows;
  tokenScript: TokenScript | undefined;
  login: LoginFlows;
  session: SessionFlows;
  organizations: OrganizationService | undefined;
  passkeys: PasskeyFlows;
  account: AccountSessions;
  /** The provider accounts linked to users, whose rows go with a deleted user's. */
  identities: ProviderIdentityStore;
}

/**
 * Imports the JWT keys, opens the identity stores (running their
 * migrations), precomputes the dummy hash and builds every flow over them.
 * Throws `invalid_argument` (`invalid_option`) without a database.
 */
export async function buildAuthParts(o: ResolvedAuthOptions, deps: AuthDependencies): Promise<AuthParts> {
  const tokens = await TokenService.create({
    algorithm: o.jwt.type,
    secret: o.jwt.secret,
    privateKey: o.jwt.privateKey,
    publicKey: o.jwt.publicKey,
    issuer: o.issuer,
    audience: o.clientId,
    accessTokenTtl: o.accessTokenTtl,
    refreshTokenTtl: o.refreshTokenTtl,
    now: o.now,
  });
  const nowSeconds = () => Math.floor(o.now() / 1000);
  const database = deps.database ?? (deps.sequelize ? sqlDatabase(deps.sequelize) : undefined);
  if (database === undefined) throw new LatchkeyError('invalid_argument', 'the identity service needs a database', { reason: 'invalid_option' });
  const { users, verifications, mfa: mfaStore, passkeys: passkeyStore, identities } = await openAuthStores(database, nowSeconds);
  const passwords = new PasswordHasher({ cost: o.bcryptCost });
  await passwords.warmUp();
  const sessions = new SessionManager({
    store: deps.memoryStore,
    cookieTtl: o.cookieTtl,
    sessionTtl: o.refreshTokenTtl,
    reuseGraceSeconds: o.refreshReuseGraceSeconds,
    now: o.now,
  });
  const mfa = new MfaFlows({ store: mfaStore, memory: deps.memoryStore, users, options: o, delivery: deps.otpDelivery ?? {}, nowSeconds, sessions });
  const verification = new VerificationFlows({ database, store: verifications, users, passwords, sessions, options: o, nowSeconds });
  const permissions = new Permissions(deps.engine);
  let organizations: OrganizationService | undefined;
  if (database.kind === 'sql' && deps.organizations !== undefined) {
    const store = new SqlOrgStore({ sequelize: database.sequelize, nowSeconds });
    await store.init();
    const scim = new SqlScimStore({ sequelize: database.sequelize });
    await scim.init();
    const od = deps.organizations;
    organizations = new OrganizationService({
      database,
      store,
      scim,
      users,
      engine: od.engine,
      tuples: od.tuples,
      customRoles: od.customRoles,
      invitationTtlSeconds: od.invitationTtlSeconds,
      resolveTxt: od.resolveTxt ?? dnsResolveTxt,
      nowSeconds,
    });
  }
  const session = new SessionFlows({ options: o, users, sessions, tokens, permissions, tokenScript: deps.tokenScript, organizations });
  const email = new EmailFlows({
    database,
    store: verifications,
    users,
    memoryStore: deps.memoryStore,
    options: o,
    nowSeconds,
    signupRoles: (requested) => signupRoles(o, requested),
    endedAllAt: (userId) => sessions.endedAllAt(userId),
    openSession: (userId, opts, ctx) => session.openFor(userId, opts, ctx),
    textResetCode: o.enableMobileBasicAuthentication && deps.otpDelivery?.sms !== undefined ? (user) => mfa.sendResetCode(user) : undefined,
    assertMfaReachable: (user) => void mfa.methodFor(user),
    mfaChallenge: async (user, login) => {
      const method = mfa.methodFor(user);
      if (method === undefined) return undefined;
      const roles = requestedRoles(user, login.roles);
      const { response, grant } = await mfa.challenge(user, method, { roles, scope: login.scope, loginMethod: login.loginMethod });
      return { response, mfaSession: grant, record: user };
    },
  });
  const passkeys = new PasskeyFlows({
    rp: o.webauthn === undefined ? undefined : new RelyingParty(o.webauthn),
    store: passkeyStore,
    memory: deps.memoryStore,
    users,
    database,
    options: o,
    sessions: session,
    email,
    signupRoles: (requested) => signupRoles(o, requested),
    endedAllAt: (userId) => sessions.endedAllAt(userId),
  });
  const login = new LoginFlows({ options: o, database, users, passwords, memoryStore: deps.memoryStore, mfa, email, sessions: session, passkeys });
  const account = new AccountSessions({ sessions, users, identities, store: deps.memoryStore, magicLinkLogin: o.enableMagicLinkLogin });
  return { options: o, users, sessions, tokens, passwords, mfa, permissions, verification, email, tokenScript: deps.tokenScript, login, session, organizations, passkeys, account, identities };
}
