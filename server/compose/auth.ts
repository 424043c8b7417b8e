/**
 * Builds the identity service into `services.auth` (after the engine, before
 * admin), with the memory store of `--redis-url` (or of the DynamoDB main
 * database, or in process), and appends the user authenticator (bearer access
 * token or session cookie) to the chain. Its HTTP endpoints outside the
 * operations table (discovery, JWKS, OAuth, social login, `/app`) are
 * mounted by the HTTP adapter from `transports/web/`.
 */
import {
  AuthService,
  ApiKeys,
  ClientRegistry,
  BackchannelLogout,
  DpopVerifier,
  SqlClientStore,
  SqlConsentStore,
  ConsentService,
  SUPPORTED_SCOPES,
  UnavailableClientStore,
  TokenScript,
  DynamoMemoryStore,
  OAuthServer,
  SocialLogin,
  SqlSsoStore,
  SsoLogin,
  SsoService,
  readIdpMetadata,
  createMemoryStore,
  engineAsPermissionEngine,
  sqlTransaction,
  type OrganizationDependencies,
  type OrgTuples,
  type JwtAlgorithm,
  type MemoryStore,
  type PermissionEngine,
  type SocialClient,
  type SocialLoginProvider,
  serviceAccountSubject,
} from '../../auth/index.ts';
import { checkRedirectUri } from '../../admin/index.ts';
import { epochMsOf, type Authenticator, type Credentials, type Principal, type Services } from '../context.ts';
import { LatchkeyError } from '../../engine/errors.ts';
import { issuerOf, relyingPartyOf, type Config } from '../flags.ts';
import { otpDeliveryOf } from './otp_delivery.ts';

/**
 * Builds the identity service into `services.auth` (after the engine, before
 * admin), with the memory store from `--redis-url`, and appends the user
 * authenticator (bearer access token or session cookie) to the chain.
 */
export async function plugAuth(services: Services): Promise<AuthService> {
  const c = services.config;
  // Sessions and codes live in Redis when it is configured; without it, in the main database when that is
  // DynamoDB (shared by every process, like the rest of its state), else in this process.
  const db = services.database;
  const memoryStore = !c.redisUrl && db.kind === 'dynamodb' ? new DynamoMemoryStore({ db: db.dynamo }) : createMemoryStore({ redisUrl: c.redisUrl });
  if (memoryStore instanceof DynamoMemoryStore) await memoryStore.init();
  const engine = services.engine;
  const permissionEngine: PermissionEngine | undefined = engine === undefined ? undefined : engineAsPermissionEngine(engine);
  const mail = Boolean(c.smtpHost);
  // A script that does not compile refuses startup (with the flag named) rather than every later login.
  const tokenScript = c.customAccessTokenScript
    ? await TokenScript.create(c.customAccessTokenScript, {
        onFailure: (detail) => services.logger.error('custom access token script failed; login refused', { reason: detail.reason, message: detail.message }),
      })
    : undefined;
  if (tokenScript !== undefined) services.closers.push(() => tokenScript.close());
  const auth = await AuthService.create(
    {
      clientId: c.clientId ?? '',
      issuer: issuerOf(c),
      jwt: {
        type: c.jwtType as JwtAlgorithm,
        secret: c.jwtSecret,
        privateKey: c.jwtPrivateKey,
        publicKey: c.jwtPublicKey,
        roleClaim: c.jwtRoleClaim,
      },
      bcryptCost: c.bcryptCost,
      accessTokenTtl: c.accessTokenExpiresIn,
      refreshTokenTtl: c.refreshTokenExpiresIn,
      roles: c.roles,
      defaultRoles: c.defaultRoles,
      protectedRoles: c.protectedRoles,
      enableSignup: c.enableSignup,
      enableBasicAuthentication: c.enableBasicAuthentication,
      enableMobileBasicAuthentication: c.enableMobileBasicAuthentication,
      enableStrongPassword: c.enableStrongPassword,
      // Verification needs mail (or SMS) to be possible at all; without it addresses count as verified.
      enableEmailVerification: c.enableEmailVerification && mail,
      enablePhoneVerification: c.enablePhoneVerification && Boolean(c.smsApiKey),
      enableMagicLinkLogin: c.enableMagicLinkLogin && mail,
      enableEmailOtp: c.enableMfa && c.enableEmailOtp && mail,
      enableSmsOtp: c.enableMfa && c.enableSmsOtp,
      enableTotpLogin: c.enableMfa && c.enableTotpLogin,
      enableMfa: c.enableMfa,
      enforceMfa: c.enableMfa && c.enforceMfa,
      mfaSecret: c.clientSecret ?? '',
      totpIssuer: c.organizationName ?? 'Latchkey',
      webauthn: c.enablePasskeys ? relyingPartyOf(c) : undefined,
      now: epochMsOf(services.clock),
    },
    { database: services.database, memoryStore, engine: permissionEngine, otpDelivery: otpDeliveryOf(services), tokenScript, organizations: organizationsOf(services) },
  );
  services.auth = auth;
  services.memoryStore = memoryStore;
  // The user principal as the auth service resolves it (the same fields; frozen, shared between calls of one token),
  // without a promise when it is known at once.
  const issuer = issuerOf(c);
  const clientStore = db.kind === 'sql' ? new SqlClientStore({ sequelize: db.sequelize }) : new UnavailableClientStore();
  await clientStore.init();
  const registry = new ClientRegistry({
    store: clientStore,
    memory: memoryStore,
    nowSeconds: () => Math.floor(auth.options.now() / 1000),
    issuer,
    flagClient: { clientId: c.clientId ?? '', clientSecret: c.clientSecret ?? '' },
    roles: auth.options.roles,
    supportedScopes: SUPPORTED_SCOPES,
  });
  // Back-channel logout: a registered client that gave a URI hears of each of its sessions that ends.
  const backchannel = new BackchannelLogout({
    registry,
    tokens: auth.tokens,
    onFailure: (detail) => services.logger.warn('back-channel logout notice not delivered', { client_id: detail.client_id, status: detail.status, err: detail.error }),
  });
  auth.sessions.onEnded = (session) => backchannel.notify(session);
  services.closers.push(() => backchannel.settled());
  const machine = machinePrincipals(auth, registry, new DpopVerifier({ memory: memoryStore, nowSeconds: () => Math.floor(auth.options.now() / 1000) }), issuer);
  // API keys first (their shape is recognised without a promise); then user tokens and cookies; a bearer token the
  // user link refuses is tried as a service account's client_credentials token before the refusal stands.
  const authenticator: Authenticator = (credentials) => {
    const key = credentials.apiKey ?? (credentials.bearer !== undefined && ApiKeys.looksLikeApiKey(credentials.bearer) ? credentials.bearer : undefined);
    if (key !== undefined) return machine.apiKey(key);
    // `Authorization: DPoP`: only a DPoP-bound token, with its proof (RFC 9449 §7.1).
    if (credentials.dpop !== undefined && credentials.bearer !== undefined) return machine.boundToken(credentials.bearer, credentials.dpop);
    const now = auth.authenticateNow(credentials);
    if (now !== undefined) return now;
    const bearer = credentials.bearer;
    const user = auth.authenticate(credentials);
    return bearer === undefined ? user : user.catch(async (err: unknown) => (await machine.serviceToken(bearer)) ?? Promise.reject(err));
  };
  services.authenticators.push(authenticator);
  services.closers.push(() => memoryStore.close());
  // Closers run last-in first-out: the email flows' background work finishes before the memory store closes.
  services.closers.push(() => auth.email.settled());
  const consentStore = db.kind === 'sql' ? new SqlConsentStore(db.sequelize) : undefined;
  await consentStore?.init();
  if (consentStore !== undefined) auth.userDataRemovers.push((userId, transaction) => consentStore.deleteUser(userId, transaction));
  services.consent = new ConsentService({
    store: consentStore,
    memory: memoryStore,
    sessions: auth.sessions,
    nowSeconds: () => Math.floor(auth.options.now() / 1000),
    pageUrl: c.enableLoginPage ? `${issuer}/app/consent` : undefined,
    authorizeUrl: `${issuer}/authorize`,
  });
  services.oauth = oauthServer(c, auth, memoryStore, issuer, registry, services.consent);
  const social = socialLogin(services, auth, memoryStore, issuer);
  if (social !== undefined) services.social = social;
  const sso = await ssoLogin(services, auth, memoryStore, issuer);
  if (sso !== undefined) services.sso = sso;
  return auth;
}

/** IdP metadata fetched from its URL: 10 seconds, no redirects, at most 256 KiB. */
async function fetchMetadata(url: string): Promise<string> {
  let res: Response;
  try {
    res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(10_000), headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml' } });
  } catch (err) {
    throw new LatchkeyError('unavailable', 'the IdP metadata URL could not be reached', { reason: 'saml_metadata_unavailable', cause: err });
  }
  const text = await res.text();
  if (!res.ok || text.length > 262_144) throw new LatchkeyError('failed_precondition', `the IdP metadata URL answered ${res.status}${res.ok ? ' with more than 256 KiB' : ''}`, { reason: 'saml_metadata_unavailable' });
  return text;
}

/** Enterprise sign-in through organizations' connections, when organizations are on (its endpoints: transports/web/sso.ts). */
async function ssoLogin(services: Services, auth: AuthService, store: MemoryStore, issuer: string): Promise<SsoLogin | undefined> {
  const organizations = auth.organizations;
  const db = services.database;
  if (organizations === undefined || db.kind !== 'sql') return undefined;
  const c = services.config;
  const sqlStore = new SqlSsoStore({ sequelize: db.sequelize });
  await sqlStore.init();
  const connections = new SsoService({
    organizations,
    orgStore: organizations.store,
    store: sqlStore,
    users: auth.users,
    publicUrl: issuer,
    readMetadata: readIdpMetadata,
    fetchMetadata,
    nowSeconds: () => Math.floor(auth.options.now() / 1000),
  });
  return new SsoLogin({
    auth,
    connections,
    store,
    checkRedirectUri: (uri) => checkRedirectUri(uri, c.allowedOrigins, issuer),
    defaultRedirectUri: c.enableLoginPage ? `${issuer}/app` : issuer,
    now: epochMsOf(services.clock),
  });
}

/**
 * What the organization service needs: the engine, and the tuple writer
 * when the FGA store is a SQL store on the main connection (its tuples then
 * commit with the organization rows; otherwise organizations answer
 * `failed_precondition`, docs/organizations.md).
 */
function organizationsOf(services: Services): OrganizationDependencies {
  const c = services.config;
  return {
    engine: () => services.engine,
    tuples: (): OrgTuples | undefined => {
      const hooks = services.engine === undefined ? undefined : services.engineHooks;
      const store = hooks?.sqlStore;
      if (hooks === undefined || store === undefined || store.sequelize !== services.sequelize) return undefined;
      return {
        ensure: async (deletes, writes, tx) => {
          await store.ensureTuplesInTransaction(deletes, writes, { transaction: sqlTransaction(tx)! });
        },
        deleteObjects: async (objects, tx) => {
          await store.deleteTuplesOfObjects(objects, { transaction: sqlTransaction(tx)! });
        },
        refresh: () => hooks.refresh(),
      };
    },
    customRoles: c.organizationRoles,
    invitationTtlSeconds: Math.floor(c.organizationInvitationTtl / 1000),
    ...(services.resolveTxt ? { resolveTxt: services.resolveTxt } : {}),
  };
}

/** The OAuth 2.0 / OpenID provider on the identity service and its memory store (its endpoints: transports/web/oauth.ts). */
function oauthServer(c: Config, auth: AuthService, store: MemoryStore, issuer: string, registry: ClientRegistry, consent: ConsentService): OAuthServer {
  return new OAuthServer({
    consent,
    auth,
    store,
    registry,
    clientSecret: c.clientSecret ?? '',
    // The same rule as every other redirect of the server (email links): under `--allowed-origins=*`
    // only the server's own origin, also without `--url` (else any site could receive codes and tokens).
    checkRedirectUri: (uri) => checkRedirectUri(uri, c.allowedOrigins, issuer),
    loginUrl: c.enableLoginPage ? `${issuer}/app` : undefined,
    defaultResponseType: c.defaultAuthorizeResponseType,
    defaultResponseMode: c.defaultAuthorizeResponseMode,
    allowPkcePlain: c.enablePkcePlain,
    registrationAccessToken: c.oauthRegistrationAccessToken,
  });
}

const PROVIDER_FLAGS: readonly Exclude<SocialLoginProvider, 'oidc'>[] = ['google', 'facebook', 'github', 'linkedin', 'apple', 'discord', 'twitter', 'microsoft', 'twitch', 'roblox'];

/** The configured providers' credentials from the flags: a provider is on exactly when its id and secret are set (as Meta says). */
export function socialClientsOf(c: Config): Partial<Record<SocialLoginProvider, SocialClient>> {
  const cfg = c as unknown as Record<string, unknown>;
  const out: Partial<Record<SocialLoginProvider, SocialClient>> = {};
  for (const p of PROVIDER_FLAGS) {
    const id = cfg[`${p}ClientId`];
    const secret = cfg[`${p}ClientSecret`];
    const scopes = cfg[`${p}Scopes`];
    if (typeof id === 'string' && id !== '' && typeof secret === 'string' && secret !== '') {
      out[p] = { clientId: id, clientSecret: secret, scopes: Array.isArray(scopes) ? (scopes as string[]) : [] };
    }
  }
  if (c.oidcIssuer && c.oidcClientId && c.oidcClientSecret) out.oidc = { clientId: c.oidcClientId, clientSecret: c.oidcClientSecret, scopes: c.oidcScopes };
  return out;
}

/** Social login on the identity service, when any provider is configured (its endpoints: transports/web/social.ts). */
function socialLogin(services: Services, auth: AuthService, store: MemoryStore, issuer: string): SocialLogin | undefined {
  const c = services.config;
  const clients = socialClientsOf(c);
  if (Object.keys(clients).length === 0) return undefined;
  return new SocialLogin({
    auth,
    store,
    database: services.database,
    publicUrl: issuer,
    clients,
    microsoftTenantId: c.microsoftTenantId,
    appleTeamId: c.appleTeamId,
    appleKeyId: c.appleKeyId,
    ...(c.oidcIssuer ? { oidc: { issuer: c.oidcIssuer, displayName: c.oidcDisplayName } } : {}),
    // The same redirect rule as /authorize and the email links.
    checkRedirectUri: (uri) => checkRedirectUri(uri, c.allowedOrigins, issuer),
    defaultRedirectUri: c.enableLoginPage ? `${issuer}/app` : issuer,
    now: epochMsOf(services.clock),
  });
}

/**
 * The principals of machines: an API key (of a user or a service account)
 * and a registered service account's client_credentials access token. Both
 * refuse with the one `unauthorized` of every failed authentication.
 */
function machinePrincipals(
  auth: AuthService,
  registry: ClientRegistry,
  dpop: DpopVerifier,
  issuer: string,
): { apiKey(key: string): Promise<Principal>; serviceToken(token: string): Promise<Principal | undefined>; boundToken(token: string, proof: NonNullable<Credentials['dpop']>): Promise<Principal> } {
  const refused = (): LatchkeyError => new LatchkeyError('unauthenticated', 'unauthorized', { reason: 'unauthenticated' });
  const serviceAccount = async (clientId: string, claims: Readonly<Record<string, unknown>>): Promise<Principal | undefined> => {
    const client = await registry.find(clientId);
    if (client === undefined || client.fromFlags || client.record.disabled || client.record.kind !== 'service_account') return undefined;
    return Object.freeze({ kind: 'service_account', clientId, subject: serviceAccountSubject(clientId), roles: [...client.record.roles], claims });
  };
  return {
    async apiKey(key) {
      const found = await registry.apiKeys.resolve(key);
      if (found === undefined) throw refused();
      const claims = Object.freeze({ scope: found.key.scopes, api_key_id: found.key.id, ...(found.key.organization_id === null ? {} : { organization_id: found.key.organization_id }) });
      if (found.kind === 'service_account') {
        const p = await serviceAccount(found.id, claims);
        if (p === undefined) throw refused();
        return p;
      }
      const user = await auth.users.findById(found.id);
      if (user === undefined || user.deactivated_at !== null || user.revoked_timestamp !== null) throw refused();
      return Object.freeze({ kind: 'user', userId: user.id, subject: `user:${user.id}`, roles: [...user.roles], claims });
    },
    async serviceToken(token) {
      let claims: Readonly<Record<string, unknown>>;
      try {
        claims = await auth.tokens.verify(token, 'access_token');
      } catch {
        return undefined;
      }
      if (claims['gty'] !== 'client_credentials' || typeof claims['sub'] !== 'string') return undefined;
      // A DPoP-bound token is never accepted as a bearer token (RFC 9449 §7.1).
      if (claims['cnf'] !== undefined) return undefined;
      return serviceAccount(claims['sub'], claims);
    },
    async boundToken(token, proof) {
      let claims: Readonly<Record<string, unknown>>;
      try {
        claims = await auth.tokens.verify(token, 'access_token');
      } catch {
        throw refused();
      }
      const jkt = (claims['cnf'] as { jkt?: unknown } | undefined)?.jkt;
      if (typeof jkt !== 'string' || proof.proof === undefined || typeof claims['sub'] !== 'string') throw refused();
      let proven: { jkt: string };
      try {
        proven = await dpop.verify(proof.proof, proof.method, `${issuer}${proof.path}`, token);
      } catch {
        throw refused();
      }
      if (proven.jkt !== jkt) throw refused();
      // A user's token of a DPoP-bound grant (code, refresh, device): its session must be alive, as for a bearer token.
      if (claims['gty'] !== 'client_credentials') return auth.authenticateBound(token, proven.jkt);
      const p = await serviceAccount(claims['sub'], claims);
      if (p === undefined) throw refused();
      return p;
    },
  };
}
