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
  TokenScript,
  DynamoMemoryStore,
  createMemoryStore,
  engineAsPermissionEngine,
  type JwtAlgorithm,
  type PermissionEngine,
} from '../../auth/index.ts';
import { epochMsOf, type Authenticator, type Services } from '../context.ts';
import { issuerOf } from '../flags.ts';
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
      now: epochMsOf(services.clock),
    },
    { database: services.database, memoryStore, engine: permissionEngine, otpDelivery: otpDeliveryOf(services), tokenScript },
  );
  services.auth = auth;
  services.memoryStore = memoryStore;
  // The user principal as the auth service resolves it (the same fields; frozen, shared between calls of one token),
  // without a promise when it is known at once.
  const authenticator: Authenticator = (credentials) => auth.authenticateNow(credentials) ?? auth.authenticate(credentials);
  services.authenticators.push(authenticator);
  services.closers.push(() => memoryStore.close());
  // Closers run last-in first-out: the email flows' background work finishes before the memory store closes.
  services.closers.push(() => auth.email.settled());
  return auth;
}
