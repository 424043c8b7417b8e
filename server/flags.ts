/**
 * The flags table and its parser: the only place configuration comes from.
 *
 * One row per flag (kebab-case name from the spec's flag reference, type,
 * default, bounds, secrecy, one-line doc). `parseFlags` reads argv with
 * minimist, validates every row, checks the cross-flag rules, and returns a
 * deep-frozen {@link Config}; or every problem at once, one message each.
 * `docs/flags.md` and `--help` are generated from the same table
 * (flag_docs.ts).
 *
 * Every secret flag `--x` has a twin `--x-file <path>` that reads the value
 * from a file (Docker and Kubernetes secrets), so that it never shows in the
 * process list; see {@link FILE_SUFFIX}.
 *
 * To add a flag: add a row to {@link FLAGS}; its camelCase key appears on
 * `Config` with the right type.
 */
import { readFileSync } from 'node:fs';
import minimist from 'minimist';
import { bool, duration, group, int, list, oneOf, str, type AnyRow, type FlagRow } from './flag_rows.ts';
import { parseCidr } from './cidr.ts';


/** The social login providers (the reference server's list); `microsoft` also takes a tenant id. */
export const SOCIAL_PROVIDERS = [
  'google',
  'facebook',
  'github',
  'linkedin',
  'apple',
  'discord',
  'twitter',
  'microsoft',
  'twitch',
  'roblox',
] as const;
export type SocialProvider = (typeof SOCIAL_PROVIDERS)[number];

type ProviderRows<P extends string> = {
  [K in `${P}-client-id` | `${P}-client-secret`]: FlagRow<string, false>;
} & { [K in `${P}-scopes`]: FlagRow<readonly string[], true> };

function providerRows<const P extends string>(p: P): ProviderRows<P> {
  return {
    [`${p}-client-id`]: str({ doc: `OAuth client id for ${p} login; setting it (with the secret) enables ${p} login` }),
    [`${p}-client-secret`]: str({ doc: `OAuth client secret for ${p} login`, secret: true }),
    [`${p}-scopes`]: list({ doc: `OAuth scopes requested from ${p} (default: the provider's standard profile scopes)`, default: [] }),
  } as ProviderRows<P>;
}

type AllProviderRows = ProviderRows<'google'> &
  ProviderRows<'facebook'> &
  ProviderRows<'github'> &
  ProviderRows<'linkedin'> &
  ProviderRows<'apple'> &
  ProviderRows<'discord'> &
  ProviderRows<'twitter'> &
  ProviderRows<'microsoft'> &
  ProviderRows<'twitch'> &
  ProviderRows<'roblox'>;

function cidrProblem(v: string): string | undefined {
  return parseCidr(v) ? undefined : `"${v}" is not a CIDR (e.g. 10.0.0.0/8 or 2001:db8::/32) or IP address`;
}

/** The SQL database types this server implements. */
export const SQL_DATABASE_TYPES = ['sqlite', 'postgres', 'mysql', 'mariadb'] as const;
/** Database types of the spec that this server does not implement (refused at startup). */
export const UNSUPPORTED_DATABASE_TYPES = [
  'sqlserver',
  'yugabyte',
  'cockroachdb',
  'libsql',
  'mongodb',
  'arangodb',
  'cassandradb',
  'scylladb',
  'couchbase',
] as const;
/** Every `--database-type` this server runs on: the SQL ones and DynamoDB. */
export const MAIN_DATABASE_TYPES = [...SQL_DATABASE_TYPES, 'dynamodb'] as const;

export const JWT_TYPES = ['HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512'] as const;

/** The flags table. Keys are the kebab-case CLI names. */
export const FLAGS = {
  ...group('Core', () => ({
    env: str({ doc: 'Deployment environment label, e.g. production or development (shown in logs)', default: 'production' }),
    'http-port': int({ doc: 'HTTP port (GraphQL, REST, OAuth, health); 0 picks a free port', default: 8080, min: 0, max: 65535 }),
    host: str({ doc: 'Bind address of the HTTP and gRPC listeners', default: '0.0.0.0' }),
    'metrics-port': int({ doc: 'Port of the metrics listener (GET /metrics); must differ from --http-port', default: 8081, min: 0, max: 65535 }),
    'metrics-host': str({ doc: 'Bind address of the metrics listener', default: '127.0.0.1' }),
    'log-level': oneOf(['debug', 'info', 'warn', 'error', 'silent'], { doc: 'Lowest level of the JSON log lines written to stdout', default: 'info' }),
    'grpc-port': int({ doc: 'gRPC port; 0 picks a free port', default: 9091, min: 0, max: 65535 }),
    'enable-grpc': bool({ doc: 'Serve gRPC; REST under /v1 is mounted only while this is true', default: true }),
    'http-request-timeout': duration({ doc: 'Time allowed to receive a whole HTTP request and answer it', default: 30_000, min: 1000 }),
    'http-headers-timeout': duration({ doc: 'Time allowed to receive the request headers', default: 10_000, min: 1000 }),
    'http-keep-alive-timeout': duration({ doc: 'Idle time before a keep-alive connection is closed', default: 5000, min: 100 }),
    'http-body-limit': int({ doc: 'Largest accepted request body in bytes (larger gives 413)', default: 1_048_576, min: 1024, max: 64 * 1_048_576 }),
    'shutdown-timeout': duration({ doc: 'On SIGTERM, time allowed for in-flight requests before connections are cut', default: 10_000 }),
  })),
  ...group('Database', () => ({
    'database-type': str({ doc: 'Main database: sqlite, postgres, mysql, mariadb or dynamodb (required)' }),
    'database-url': str({ doc: 'Database URL (postgres://…, mysql://…, mariadb://…, or sqlite:<file>); or use the host/port/name flags. DynamoDB: the endpoint (default: AWS in --cloud-region)', secret: true }),
    'database-name': str({ doc: 'Database name (SQLite: the file path)' }),
    'database-username': str({ doc: 'Database user' }),
    'database-password': str({ doc: 'Database password', secret: true }),
    'database-host': str({ doc: 'Database host' }),
    'database-port': int({ doc: 'Database port (default: the type\'s standard port)', min: 1, max: 65535 }),
    'database-cert': str({ doc: 'TLS client certificate for the database (PEM text or file path)' }),
    'database-ca-cert': str({ doc: 'CA certificate to verify the database server (PEM text or file path); enables TLS' }),
    'database-cert-key': str({ doc: 'TLS client key for the database (PEM text or file path)', secret: true }),
  })),
  // The spec names these flags, but this server has no document-database backend: each is refused at
  // startup (as --database-type couchbase is) rather than accepted and silently ignored.
  ...group('Document-database backend (refused at startup: this server has no document-database backend)', () => ({
    'docdb-bucket': str({ doc: 'Bucket of the document-database backend; refused, since no such backend exists here (DynamoDB is the key-value one)' }),
    'docdb-scope': str({ doc: 'Scope of the document-database backend; refused, since no such backend exists here' }),
    'docdb-ram-quota': str({ doc: 'RAM quota of the document-database bucket; refused, since no such backend exists here' }),
  })),
  ...group('Cloud key-value backend (--database-type dynamodb)', () => ({
    'cloud-region': str({ doc: 'DynamoDB region (required with --database-type dynamodb)' }),
    'cloud-access-key-id': str({ doc: 'DynamoDB access key id (with --cloud-secret-access-key; default: the AWS SDK credential chain)', secret: true }),
    'cloud-secret-access-key': str({ doc: 'DynamoDB secret access key (with --cloud-access-key-id)', secret: true }),
    'cloud-table-prefix': str({ doc: 'Prefix of every DynamoDB table name (letters, digits, _ . -), so several deployments can share an account', default: 'latchkey_' }),
  })),
  ...group('Memory store', () => ({
    'redis-url': str({ doc: 'Redis URL for sessions and the shared rate limiter (default: in-process memory)', secret: true }),
  })),
  ...group('FGA', () => ({
    'enable-explain-permission': bool({
      doc: 'Let a signed-in user call explain_permission on their own checks; an explanation names the tuples a check reads (who else an object is shared with, the groups on the way), so it is off by default. Super-admins use _fga_explain whatever this says',
      default: false,
    }),
    'fga-store': oneOf(['sqlite', 'postgres', 'mysql', 'mariadb', 'memory'], { doc: 'FGA tuple store (default: the main SQL database)' }),
    'fga-store-url': str({ doc: 'URL of a separate FGA store (postgres://…, mysql://…, mariadb://… or sqlite:<file>)', secret: true }),
    'fga-cache-size': int({ doc: 'Check answers cached per process (LRU); 0 disables the check cache', default: 100_000, min: 0, max: 10_000_000 }),
    'fga-cache-revision-poll': duration({
      doc: 'Longest delay before this process sees an FGA write made by another process on the same database; 0 disables the check cache',
      default: 1000,
      min: 0,
      max: 3_600_000,
    }),
    'fga-mirror': bool({ doc: 'Keep an in-memory mirror of a SQL FGA store for fast Check, kept current from its changelog', default: true }),
    'fga-condition-cost-limit': int({
      doc: "Evaluation cost (cel-go's runtime cost) above which a condition fails with condition_cost_exceeded instead of answering; OpenFGA's --max-condition-evaluation-cost",
      default: 100,
      min: 1,
      max: 10_000_000,
    }),
    'openfga-preshared-keys': list({
      doc: "Bearer tokens (OpenFGA preshared keys) that authenticate OpenFGA's HTTP API under /stores (docs/openfga.md); empty leaves that API unmounted",
      default: [],
      secret: true,
      item: (key) => (key.length < 8 ? 'each OpenFGA preshared key must be at least 8 characters' : undefined),
    }),
  })),
  ...group('OAuth / app', () => ({
    'client-id': str({ doc: 'Client id of this instance (required)' }),
    'client-secret': str({ doc: 'Client secret of this instance (required)', secret: true }),
    'admin-secret': str({ doc: 'Super-admin secret (required, non-empty)', secret: true }),
    url: str({ doc: 'Public URL of this server: token issuer, discovery base and cookie domain (default: http://<host>:<http-port>)' }),
    'allowed-origins': list({ doc: 'Origins allowed for CORS and CSRF; a listed origin gets credentialed CORS (browser cookie flows, e.g. Authorizer\'s SDK); * allows any origin without credentials', default: ['*'] }),
    'default-authorize-response-type': oneOf(['token', 'code'], { doc: 'Response type of /authorize when the request names none', default: 'token' }),
    'default-authorize-response-mode': oneOf(['query', 'fragment', 'form_post', 'web_message'], {
      doc: 'Response mode of /authorize when the request names none',
      default: 'query',
    }),
    'oauth-registration-access-token': str({
      doc: 'Turns on dynamic client registration (RFC 7591) at POST /oauth/register, for callers presenting this initial access token as a bearer token; unset (the default): registration is off',
      secret: true,
    }),
    'enable-pkce-plain': bool({
      doc: 'For legacy clients only: accept PKCE code_challenge_method=plain and take an absent method as plain (RFC 7636); off, /authorize accepts S256 only (OAuth 2.1, ASVS 10.4.6)',
      default: false,
    }),
  })),
  ...group('Organization / UI', () => ({
    'organization-name': str({ doc: 'Organization name shown on pages and in emails', default: 'Latchkey' }),
    'organization-logo': str({ doc: 'URL of the organization logo', default: '' }),
    'organization-roles': list({
      doc: 'Custom organization roles besides owner, admin and member (docs/organizations.md): each becomes a relation of the FGA type organization',
      default: [],
    }),
    'organization-invitation-ttl': duration({ doc: 'How long an organization invitation stays usable', default: 7 * 86_400_000, min: 60_000, max: 90 * 86_400_000 }),
    'enable-login-page': bool({ doc: 'Serve the built-in login page', default: true }),
    'enable-dashboard': bool({ doc: 'Serve the admin dashboard at /dashboard (signed in with the admin secret)', default: true }),
    'enable-playground': bool({ doc: 'Serve the GraphQL playground', default: true }),
    'enable-graphql-introspection': bool({ doc: 'Answer GraphQL introspection queries', default: true }),
    'graphql-max-depth': int({ doc: 'Deepest GraphQL selection accepted', default: 15, min: 1, max: 100 }),
    'graphql-max-complexity': int({ doc: 'Most GraphQL fields selected by one request', default: 300, min: 1, max: 100_000 }),
    'graphql-max-aliases': int({ doc: 'Most aliases in one GraphQL request', default: 30, min: 0, max: 10_000 }),
  })),
  ...group('Auth behavior', () => ({
    roles: list({ doc: 'Roles a user may have', default: ['user'] }),
    'default-roles': list({ doc: 'Roles given at sign-up', default: ['user'] }),
    'protected-roles': list({ doc: 'Roles that sign-up may not request', default: [] }),
    'enable-strong-password': bool({ doc: 'Require strong passwords', default: true }),
    'enable-basic-authentication': bool({ doc: 'Allow email + password sign-up and login', default: true }),
    'enable-email-verification': bool({ doc: 'Require email verification', default: true }),
    'enable-magic-link-login': bool({ doc: 'Allow magic-link login', default: true }),
    'enforce-mfa': bool({ doc: 'Require multi-factor authentication for every user (needs TOTP, email OTP with --smtp-host, or SMS OTP with the vendor flags)', default: false }),
    'enable-mfa': bool({ doc: 'Allow multi-factor authentication', default: true }),
    'enable-signup': bool({ doc: 'Allow sign-up', default: true }),
    'enable-totp-login': bool({ doc: 'Allow TOTP as a second factor', default: false }),
    'enable-email-otp': bool({ doc: 'Allow email OTP as a second factor', default: false }),
    'enable-sms-otp': bool({ doc: 'Allow SMS OTP as a second factor', default: false }),
    'enable-mobile-basic-authentication': bool({ doc: 'Allow phone number + password sign-up and login', default: false }),
    'enable-phone-verification': bool({ doc: 'Require phone number verification', default: false }),
    'reset-password-url': str({ doc: 'URL of the reset-password page linked from emails', default: '' }),
    'bcrypt-cost': int({ doc: 'bcrypt cost (log2 rounds) of password hashes', default: 10, min: 10, max: 15 }),
    'access-token-expires-in': int({ doc: 'Lifetime of access and id tokens, in seconds', default: 1800, min: 60, max: 86_400 }),
    'refresh-token-expires-in': int({ doc: 'Lifetime of refresh tokens and sessions, in seconds', default: 2_592_000, min: 300, max: 31_536_000 }),
  })),
  ...group('Passkeys (WebAuthn)', () => ({
    'enable-passkeys': bool({ doc: 'Allow passkeys: sign-up without a password, sign-in (usernameless or with an email), a passkey as the second factor, adding passkeys to an account', default: false }),
    'webauthn-rp-id': str({ doc: 'Relying party ID: the domain passkeys are scoped to, equal to or a parent of every origin\'s host (default: the host of --url)', default: '' }),
    'webauthn-rp-name': str({ doc: 'Relying party name shown by authenticators when a passkey is made (default: --organization-name)', default: '' }),
    'webauthn-origins': list({ doc: 'Origins a passkey ceremony may come from, exact (scheme, host, port) (default: the origin of --url)', default: [] }),
    'webauthn-attestation': oneOf(['none', 'direct'], { doc: 'Attestation asked of authenticators: none, or direct (an attestation statement is required and verified)', default: 'none' }),
    'webauthn-require-user-verification': bool({ doc: 'Refuse a passkey answer whose authenticator did not verify the user (PIN or biometric); off, user verification is preferred', default: false }),
  })),
  ...group('Cookies', () => ({
    'app-cookie-secure': bool({ doc: 'Mark the app session cookies Secure', default: true }),
    'app-cookie-same-site': oneOf(['none', 'lax', 'strict'], { doc: 'SameSite of the app session cookies (none needs Secure; insecure cookies fall back to lax)', default: 'none' }),
    'admin-cookie-secure': bool({ doc: 'Mark the admin session cookie Secure', default: true }),
  })),
  ...group('JWT', () => ({
    'jwt-type': oneOf(JWT_TYPES, { doc: 'JWT signing algorithm (required)' }),
    'jwt-secret': str({ doc: 'HMAC secret (HS256/HS384/HS512)', secret: true }),
    'jwt-private-key': str({ doc: 'PEM private key (RS*, ES*, PS*)', secret: true }),
    'jwt-public-key': str({ doc: 'PEM public key (RS*, ES*, PS*)' }),
    'jwt-role-claim': str({ doc: 'Claim that carries the roles', default: 'role' }),
    'custom-access-token-script': str({ doc: 'JavaScript function (user, tokenPayload) returning extra claims for the access and id tokens; run isolated (1 s, 32 MB); a failure refuses the login', default: '' }),
  })),
  ...group('SMTP', () => ({
    'smtp-host': str({ doc: 'SMTP host (enables email)' }),
    'smtp-port': int({ doc: 'SMTP port', default: 587, min: 1, max: 65535 }),
    'smtp-username': str({ doc: 'SMTP user' }),
    'smtp-password': str({ doc: 'SMTP password', secret: true }),
    'smtp-sender-email': str({ doc: 'From address of emails' }),
    'smtp-sender-name': str({ doc: 'From name of emails', default: 'Latchkey' }),
    'smtp-local-name': str({ doc: 'Name announced in SMTP HELO/EHLO' }),
    'skip-tls-verification': bool({ doc: 'Do not verify the SMTP server certificate', default: false }),
  })),
  ...group('SMS vendor', () => ({
    'sms-account-sid': str({ doc: 'SMS vendor account id' }),
    'sms-api-key': str({ doc: 'SMS vendor API key', secret: true }),
    'sms-api-secret': str({ doc: 'SMS vendor API secret', secret: true }),
    'sms-sender': str({ doc: 'SMS sender number' }),
    'sms-api-url': str({ doc: 'Base URL of the SMS vendor API (Twilio Messages API)', default: 'https://api.twilio.com' }),
  })),
  ...group('Social providers', () => ({
    ...(Object.assign({}, ...SOCIAL_PROVIDERS.map((p) => providerRows(p))) as AllProviderRows),
    'microsoft-tenant-id': str({ doc: 'Microsoft tenant id (default: common)', default: 'common' }),
    'apple-team-id': str({ doc: 'Apple developer team id: with a PEM private key as --apple-client-secret, the client-secret JWT is signed by the server' }),
    'apple-key-id': str({ doc: 'Id of the Sign in with Apple key given as --apple-client-secret (the kid of the client-secret JWT)' }),
    'oidc-issuer': str({ doc: 'Issuer URL of any OpenID Connect provider (Keycloak, Okta, Entra, ...), found by discovery; with --oidc-client-id and --oidc-client-secret enables /oauth_login/oidc' }),
    'oidc-client-id': str({ doc: 'OAuth client id at the --oidc-issuer provider' }),
    'oidc-client-secret': str({ doc: 'OAuth client secret at the --oidc-issuer provider', secret: true }),
    'oidc-scopes': list({ doc: 'Scopes requested from the --oidc-issuer provider (default: openid email profile)', default: [] }),
    'oidc-display-name': str({ doc: 'Name of the --oidc-issuer provider shown to users', default: 'OpenID Connect' }),
  })),
  ...group('Other', () => ({
    'outbox-lease': duration({
      doc: 'How long a replica holds a mail, text message or webhook delivery it is sending; when the replica dies mid-send another takes it over after this (at least once: receivers deduplicate by webhook-id, Message-ID or Idempotency-Key). Keep it above the webhook timeout (15 s) and the SMTP and SMS timeouts (10 s); a text message whose code (1 minute) expired first is not sent',
      default: 45_000,
      min: 1000,
    }),
    'webhook-allow-private-networks': bool({ doc: 'Allow webhook endpoints on private, loopback and link-local addresses (tests, closed networks)', default: false }),
    'disable-admin-header-auth': bool({ doc: 'Refuse the x-service-admin-secret header; only the admin cookie is honoured', default: false }),
    'trusted-proxies': list({ doc: 'CIDRs of reverse proxies whose X-Forwarded-For is trusted (default: none)', default: [], item: cidrProblem }),
    'rate-limit-rps': int({ doc: 'Requests per second allowed per client IP (0 disables rate limiting)', default: 30, min: 0, max: 1_000_000 }),
    'rate-limit-burst': int({ doc: 'Extra requests per client IP allowed in a burst', default: 20, min: 0, max: 1_000_000 }),
    'rate-limit-account-rps': int({
      doc: 'Requests per second allowed per signed-in account or service account, whatever its client IPs, counted across replicas through Redis (0 disables)',
      default: 0,
      min: 0,
      max: 1_000_000,
    }),
    'rate-limit-account-burst': int({ doc: 'Extra requests per account allowed in a burst (with --rate-limit-account-rps)', default: 0, min: 0, max: 1_000_000 }),
  })),
} as const;

export type FlagName = keyof typeof FLAGS;

type Camel<S extends string> = S extends `${infer H}-${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;
type ValueOf<R> = R extends FlagRow<infer T, infer D> ? (D extends true ? T : T | undefined) : never;

/** The validated, deep-frozen configuration: one camelCase key per flag. */
export type Config = { readonly [K in FlagName as Camel<K>]: ValueOf<(typeof FLAGS)[K]> };

/** kebab-case → camelCase. */
export function camel(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** v1 names and their replacements. */
const DEPRECATED: Record<string, string> = {
  database_url: 'database-url',
  database_type: 'database-type',
  log_level: 'log-level',
  redis_url: 'redis-url',
  database_name: 'database-name',
  admin_secret: 'admin-secret',
  client_id: 'client-id',
  client_secret: 'client-secret',
  jwt_type: 'jwt-type',
  jwt_secret: 'jwt-secret',
};

export const ADMIN_SECRET_FATAL = 'FATAL: --admin-secret is required and must not be empty.';

export type ParseResult = { ok: true; config: Config } | { ok: false; problems: string[] };

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/**
 * Parses `argv` (flags only, the subcommand already removed). Returns the
 * frozen config, or every problem found, each a one-line message.
 */
export function parseFlags(argv: readonly string[]): ParseResult {
  const rows = FLAGS as unknown as Record<string, AnyRow>;
  const twins = fileTwins(rows);
  const parsed = minimist([...argv], { string: [...Object.keys(rows), ...twins.keys()], boolean: [], stopEarly: false });
  const problems: string[] = [];
  const raw: Record<string, string[]> = {};
  const files: Record<string, string[]> = {};

  for (const [key, value] of Object.entries(parsed)) {
    if (key === '_') continue;
    if (key === 'env-file' || key === 'env_file') {
      problems.push('--env-file is not supported: configuration comes from command-line flags only');
      continue;
    }
    const replacement = DEPRECATED[key];
    if (replacement) {
      problems.push(`--${key} is deprecated, use --${replacement}`);
      continue;
    }
    const values = (Array.isArray(value) ? value : [value]).map((v) => (typeof v === 'boolean' ? String(v) : String(v)));
    const secret = twins.get(key);
    if (secret !== undefined) {
      files[secret] = values;
      continue;
    }
    if (!Object.hasOwn(rows, key)) {
      // minimist also records `--no-x` as x=false and dotted keys as objects.
      problems.push(`unknown flag --${key}`);
      continue;
    }
    raw[key] = values;
  }
  for (const extra of parsed._) problems.push(`unexpected argument "${String(extra)}"`);
  // The process entry's one file read besides argv (conventions §4): each secret's file twin, read here so
  // that its value is validated like the flag's own and its problems are listed with the others.
  for (const [name, paths] of Object.entries(files)) {
    const twin = `${name}${FILE_SUFFIX}`;
    if (raw[name] !== undefined) {
      problems.push(`--${name} and --${twin} are both given; use one`);
      continue;
    }
    if (paths.length > 1) {
      problems.push(`--${twin} is given more than once`);
      continue;
    }
    const read = readSecretFile(twin, paths[0] ?? '');
    if (read.ok) raw[name] = [read.value];
    else problems.push(read.problem);
  }

  const out: Record<string, unknown> = {};
  for (const [name, r] of Object.entries(rows)) {
    const given = raw[name];
    if (given === undefined) {
      out[camel(name)] = r.default;
      continue;
    }
    if (given.length > 1 && r.kind !== 'list') {
      problems.push(`--${name} is given more than once`);
      continue;
    }
    if (r.kind === 'list') {
      const acc: string[] = [];
      let bad = false;
      for (const g of given) {
        const res = r.parse(g);
        if (!res.ok) {
          problems.push(`--${name} ${res.problem}`);
          bad = true;
          break;
        }
        acc.push(...(res.value as string[]));
      }
      if (!bad) out[camel(name)] = acc;
      continue;
    }
    const text = given[0] ?? '';
    if (text === '' && r.kind !== 'bool' && r.kind !== 'string') {
      problems.push(`--${name} needs a value`);
      continue;
    }
    const res = r.parse(text);
    if (!res.ok) problems.push(`--${name} ${res.problem}`);
    else out[camel(name)] = res.value;
  }

  crossChecks(out, raw, problems);
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, config: deepFreeze(out) as unknown as Config };
}

function crossChecks(c: Record<string, unknown>, raw: Record<string, string[]>, problems: string[]): void {
  const adminSecret = c.adminSecret as string | undefined;
  if (adminSecret === undefined || adminSecret.trim() === '') problems.unshift(ADMIN_SECRET_FATAL);
  const oidc = [c['oidcIssuer'], c['oidcClientId'], c['oidcClientSecret']].map((v) => typeof v === 'string' && v !== '');
  if (oidc.some(Boolean) && !oidc.every(Boolean)) problems.push('--oidc-issuer, --oidc-client-id and --oidc-client-secret go together');
  if (typeof c['oidcIssuer'] === 'string' && c['oidcIssuer'] !== '' && !/^https?:\/\/[^\s/]+/.test(c['oidcIssuer'])) problems.push('--oidc-issuer must be an http(s) URL');
  if (!c.clientId) problems.push('--client-id is required');
  if (!c.clientSecret) problems.push('--client-secret is required');

  const jwtType = c.jwtType as string | undefined;
  if (!raw['jwt-type']) {
    problems.push('--jwt-type is required (e.g. HS256 with --jwt-secret, or RS256 with --jwt-private-key and --jwt-public-key)');
  } else if (jwtType?.startsWith('HS')) {
    if (!c.jwtSecret) problems.push(`--jwt-secret is required when --jwt-type is ${jwtType}`);
    if (c.jwtPrivateKey || c.jwtPublicKey) problems.push(`--jwt-private-key and --jwt-public-key do not apply to --jwt-type ${jwtType}; use --jwt-secret`);
  } else if (jwtType) {
    if (!c.jwtPrivateKey) problems.push(`--jwt-private-key is required when --jwt-type is ${jwtType}`);
    if (!c.jwtPublicKey) problems.push(`--jwt-public-key is required when --jwt-type is ${jwtType}`);
  }

  const dbType = c.databaseType as string | undefined;
  if (!dbType) {
    problems.push('--database-type is required (sqlite, postgres, mysql, mariadb or dynamodb)');
  } else if ((UNSUPPORTED_DATABASE_TYPES as readonly string[]).includes(dbType)) {
    problems.push(`--database-type ${dbType} is not supported by this server; use sqlite, postgres, mysql, mariadb or dynamodb`);
  } else if (!(MAIN_DATABASE_TYPES as readonly string[]).includes(dbType)) {
    problems.push(`--database-type must be one of sqlite, postgres, mysql, mariadb, dynamodb, got "${dbType}"`);
  } else if (dbType === 'dynamodb') {
    if (!c.cloudRegion) problems.push('--cloud-region is required for dynamodb');
    if (Boolean(c.cloudAccessKeyId) !== Boolean(c.cloudSecretAccessKey)) problems.push('--cloud-access-key-id and --cloud-secret-access-key must be given together');
    if (c.databaseUrl && !/^https?:\/\/[^\s/]+/.test(c.databaseUrl as string)) problems.push('--database-url for dynamodb must be an http:// or https:// endpoint');
    if (!/^[A-Za-z0-9_.-]{0,128}$/.test(c.cloudTablePrefix as string)) problems.push('--cloud-table-prefix may hold only letters, digits, _ . and - (at most 128)');
  } else if (!c.databaseUrl) {
    if (dbType === 'sqlite') {
      if (!c.databaseName) problems.push('--database-url (sqlite:<file>) or --database-name (the file path) is required for sqlite');
    } else if (!c.databaseHost || !c.databaseName) {
      problems.push(`--database-url, or --database-host with --database-name, is required for ${dbType}`);
    }
  }
  if (Boolean(c.databaseCert) !== Boolean(c.databaseCertKey)) problems.push('--database-cert and --database-cert-key must be given together');

  for (const f of ['docdb-bucket', 'docdb-scope', 'docdb-ram-quota'])
    if (raw[f] !== undefined) problems.push(`--${f} is not supported by this server: it has no document-database backend (use --database-type sqlite, postgres, mysql, mariadb or dynamodb)`);
  if (c.fgaStoreUrl && !c.fgaStore) problems.push('--fga-store-url needs --fga-store');
  if (c.fgaStore && c.fgaStore !== 'memory' && !c.fgaStoreUrl && c.fgaStore !== dbType)
    problems.push(`--fga-store ${String(c.fgaStore)} needs --fga-store-url`);

  if ((c.httpHeadersTimeout as number) > (c.httpRequestTimeout as number))
    problems.push('--http-headers-timeout must not exceed --http-request-timeout');
  if ((c.allowedOrigins as readonly string[]).length === 0) problems.push('--allowed-origins must not be empty (use * to allow any origin)');
  if (c.httpPort === c.metricsPort && c.httpPort !== 0) problems.push('--http-port and --metrics-port must differ');
  if (c.enableGrpc && c.grpcPort !== 0 && (c.grpcPort === c.httpPort || c.grpcPort === c.metricsPort))
    problems.push('--grpc-port must differ from --http-port and --metrics-port');

  for (const p of SOCIAL_PROVIDERS) {
    if (Boolean(c[camel(`${p}-client-id`)]) !== Boolean(c[camel(`${p}-client-secret`)]))
      problems.push(`--${p}-client-id and --${p}-client-secret must be given together`);
  }
  const roles = c.roles as readonly string[];
  for (const r of c.defaultRoles as readonly string[])
    if (!roles.includes(r)) problems.push(`--default-roles: "${r}" is not one of --roles`);
  if (c.enforceMfa && !c.enableMfa) problems.push('--enforce-mfa needs --enable-mfa');
  for (const r of c.organizationRoles as readonly string[]) {
    if (!/^[a-z][a-z0-9_]{0,63}$/.test(r) || ['owner', 'admin', 'member', 'organization'].includes(r) || r.startsWith('can_'))
      problems.push(`--organization-roles: "${r}" must be a lower-case relation name that is not owner, admin, member, organization or can_*`);
  }
  if (c.enablePasskeys) {
    const rp = relyingPartyOf(c as unknown as Config);
    if (!/^[a-z0-9.-]+$/i.test(rp.rpId)) problems.push(`--webauthn-rp-id must be a host name, got "${rp.rpId}"`);
    // WebAuthn §5.1.4.1: an RP ID is a domain; browsers refuse an IP address (so would every ceremony).
    else if (/^[0-9.]+$/.test(rp.rpId)) problems.push(`--webauthn-rp-id must be a domain name, not an IP address ("${rp.rpId}"): set --url to the server's public URL, or --webauthn-rp-id`);
    for (const origin of rp.origins) {
      let url: URL | undefined;
      try {
        url = new URL(origin);
      } catch {
        url = undefined;
      }
      if (url === undefined || url.origin !== origin) {
        problems.push(`--webauthn-origins: "${origin}" is not an origin (scheme://host[:port])`);
        continue;
      }
      // WebAuthn §5.1.4.1: the RP ID is the origin's host or a registrable suffix of it; a secure context (https, or localhost).
      if (url.hostname !== rp.rpId && !url.hostname.endsWith(`.${rp.rpId}`)) problems.push(`--webauthn-origins: "${origin}" is not within --webauthn-rp-id ${rp.rpId}`);
      if (url.protocol !== 'https:' && !(url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname.endsWith('.localhost')))) {
        problems.push(`--webauthn-origins: "${origin}" must be https (or http on localhost)`);
      }
    }
  }
  if (c.smsApiUrl && !/^https?:\/\/[^/]/.test(c.smsApiUrl as string)) problems.push('--sms-api-url must be an http(s) URL');
  const smsVendor = Boolean(c.smsAccountSid && c.smsApiKey && c.smsApiSecret && c.smsSender);
  if (c.enableMfa && c.enableSmsOtp && !smsVendor)
    problems.push('--enable-sms-otp needs --sms-account-sid, --sms-api-key, --sms-api-secret and --sms-sender');
  // Enforced MFA with no channel would refuse every login (mfa_method_unavailable): refused here instead.
  if (c.enableMfa && c.enforceMfa && !(c.enableTotpLogin || (c.enableEmailOtp && c.smtpHost) || (c.enableSmsOtp && smsVendor)))
    problems.push('--enforce-mfa needs a usable second factor: --enable-totp-login, --enable-email-otp with --smtp-host, or --enable-sms-otp with the --sms-* vendor flags');
}

/**
 * The suffix of a secret flag's file twin: `--jwt-private-key-file /run/secrets/jwt.pem` reads
 * `--jwt-private-key` from that file. Giving both the flag and its twin is refused; so is a file that
 * cannot be read, listed with every other problem. Trailing line breaks (`\n`, `\r\n`) are removed,
 * as `echo` and most editors end a file with one; any other whitespace is part of the value.
 */
export const FILE_SUFFIX = '-file';

/** The file twins' names (`jwt-secret-file`) → their secret flag (`jwt-secret`). */
function fileTwins(rows: Record<string, AnyRow>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, r] of Object.entries(rows)) if (r.secret) out.set(`${name}${FILE_SUFFIX}`, name);
  return out;
}

/** A file twin's value: the file's text without trailing line breaks, or the problem reading it. */
function readSecretFile(twin: string, path: string): { ok: true; value: string } | { ok: false; problem: string } {
  if (path === '') return { ok: false, problem: `--${twin} needs a file path` };
  try {
    return { ok: true, value: readFileSync(path, 'utf8').replace(/[\r\n]+$/, '') };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : (code ?? (err as Error).message);
    return { ok: false, problem: `--${twin}: cannot read "${path}" (${why})` };
  }
}

/** The config as loggable JSON: secret values replaced by `[redacted]`. */
export function redactedConfig(config: Config): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, r] of Object.entries(FLAGS as unknown as Record<string, AnyRow>)) {
    const v = (config as unknown as Record<string, unknown>)[camel(name)];
    out[name] = r.secret && v !== undefined && v !== '' ? '[redacted]' : v;
  }
  return out;
}

/** The issuer of tokens: `--url` when given, else the local HTTP address. */
export function issuerOf(c: Pick<Config, 'url' | 'host' | 'httpPort'>): string {
  const url = c.url;
  if (url) return url.replace(/\/+$/, '');
  const host = c.host === '0.0.0.0' || c.host === '::' ? 'localhost' : c.host;
  return `http://${host}:${c.httpPort}`;
}

/**
 * The passkeys relying party from the flags: `--webauthn-rp-id` (default: the
 * host of the server URL), `--webauthn-rp-name` (default:
 * `--organization-name`), `--webauthn-origins` (default: the server URL's
 * origin), attestation and user verification.
 */
export function relyingPartyOf(c: Pick<Config, 'url' | 'host' | 'httpPort' | 'organizationName' | 'webauthnRpId' | 'webauthnRpName' | 'webauthnOrigins' | 'webauthnAttestation' | 'webauthnRequireUserVerification'>): {
  rpId: string;
  rpName: string;
  origins: string[];
  attestation: 'none' | 'direct';
  requireUserVerification: boolean;
} {
  const base = new URL(issuerOf(c));
  return {
    rpId: c.webauthnRpId || base.hostname,
    rpName: c.webauthnRpName || c.organizationName || 'Latchkey',
    origins: c.webauthnOrigins.length > 0 ? [...c.webauthnOrigins] : [base.origin],
    attestation: c.webauthnAttestation,
    requireUserVerification: c.webauthnRequireUserVerification,
  };
}
