/**
 * The identity half of Latchkey: users, passwords, tokens and sessions.
 *
 * Build one {@link AuthService} per process with `AuthService.create(options,
 * { sequelize, memoryStore, engine })`; its methods are the identity
 * operations. Options are plain objects (from the composition root); nothing
 * here reads flags or the environment or knows about transports.
 */
export {
  AuthService,
  INVALID_CREDENTIALS_MESSAGE,
  SESSION_COOKIE,
  SESSION_DOMAIN_COOKIE,
  sessionCookieOf,
  toPublicUser,
  type AuthCallContext,
  type AuthResponse,
  type AuthResult,
  type PublicUser,
  type SessionGrant,
  type UserPrincipal,
} from './auth_service.ts';
export { type AuthDependencies, type OrganizationDependencies } from './auth_parts.ts';
export { type SignupRecorder } from './signup_recorder.ts';
export { FGA_DISABLED_MESSAGE, LIST_PERMISSIONS_CAP, Permissions, toSubject, type CallerPrincipal, type PermissionEngine, type RequiredRelation, type WireTuple } from './permissions.ts';
export { resolveAuthOptions, type AuthOptions, type ResolvedAuthOptions } from './options.ts';
export { createMemoryStore, InProcessMemoryStore, openRedis, RedisMemoryStore, type MemoryStore } from './memory_store.ts';
export { SessionManager, type SessionRecord, type RotationOutcome } from './sessions.ts';
export { TokenService, JWT_ALGORITHMS, TOKEN_TYPES, type JwtAlgorithm, type TokenClaims, type TokenOptions, type TokenType } from './tokens.ts';
export { PasswordHasher, assertPasswordAcceptable, BCRYPT_MAX_BYTES } from './password.ts';
export { SqlUserStore } from './user_store.ts';
export { SqliteStatements } from './sqlite_statements.ts';
export { AUTH_MIGRATIONS } from './user_migrations.ts';
export { USER_EXISTS_MESSAGE, emailKey, normalizeEmail, normalizePhone, type UserFields, type UserPage, type UserRecord, type UserStore } from './user_store_types.ts';
export { engineAsPermissionEngine, fgaSubjectsOfUser } from './fga_adapter.ts';
export {
  INVITATION_TTL_SECONDS,
  VERIFICATION_IDENTIFIERS,
  VERIFICATION_MIGRATIONS,
  VERIFICATION_TTL_SECONDS,
  SqlVerificationStore,
  type VerificationStore,
  type VerificationIdentifier,
  type VerificationRecord,
} from './verification.ts';
export { VerificationFlows } from './verification_flows.ts';
export {
  MAX_OTP_ATTEMPTS,
  MFA_COOKIE,
  MFA_SESSION_TTL_SECONDS,
  OTP_ATTEMPT_WINDOW_SECONDS,
  OTP_TTL_SECONDS,
  RECOVERY_CODE_COUNT,
  MfaFlows,
  digestsEqual,
  otpDigest,
  type MfaMethod,
  type MfaProof,
  type OtpDelivery,
} from './mfa.ts';
export { MFA_MIGRATIONS, SqlMfaStore, type AuthenticatorRow, type MfaStore, type OtpRow } from './mfa_store.ts';
export { openAuthStores, type AuthStores } from './auth_stores.ts';
export { DynamoMfaStore, DynamoUserStore, DynamoVerificationStore } from './dynamo_auth_stores.ts';
export { createSmsSender, smsOutboxSender, type SmsOptions, type SmsSender } from './sms.ts';
export {
  EmailFlows,
  MAGIC_LINK_SENT_MESSAGE,
  RESET_LINK_SENT_MESSAGE,
  VERIFICATION_SENT_MESSAGE,
  type LinkDelivery,
  type LinkMailEvent,
  type LinkMailer,
  type VerifyEmailOutcome,
} from './email_flows.ts';
export { ConsentService, SqlConsentStore, CONSENT_TICKET_TTL_SECONDS, type ConsentGrant } from './consent.ts';
export { OAuthServer, SUPPORTED_SCOPES, type AuthorizeOutcome, type OAuthEvent, type OAuthEventSink, type OAuthServerOptions, type OAuthTokenResponse, type ResponseMode } from './oauth_server.ts';
export { readParams, type OAuthParams } from './oauth_common.ts';
export {
  ClientRegistry,
  CLIENT_AUTH_METHODS,
  CLIENT_ASSERTION_ALGORITHMS,
  GRANT_CLIENT_CREDENTIALS,
  GRANT_TOKEN_EXCHANGE,
  serviceAccountSubject,
  type ClientInput,
  type PublicClient,
  type ResolvedClient,
} from './client_registry.ts';
export { ApiKeys, type ApiKeyPrincipal, type PublicApiKey } from './api_keys.ts';
export { CLIENT_MIGRATIONS, SqlClientStore, UnavailableClientStore, type ApiKeyRecord, type ClientRecord, type ClientStore } from './client_store.ts';
export type { ServiceAccountPrincipal } from './public_user.ts';
export { DPOP_ALGORITHMS, DpopVerifier, accessTokenHash, invalidDpopProof } from './dpop.ts';
export { BackchannelLogout } from './backchannel_logout.ts';
export type { EndSessionOutcome } from './oidc_endpoints.ts';
export { AuthorizationCodes, type CodeGrant, type Redemption } from './oauth_codes.ts';
export { createSmtpMailer, type Mailer, type MailMessage, type SmtpOptions } from './mailer.ts';
export { MailQueue, OutboxMailQueue, type MailQueueOptions, type MailOutboxStore } from './mail_queue.ts';
export { TokenScript, RESERVED_CLAIMS, type TokenScriptOptions } from './token_script.ts';
export { SocialLogin, SOCIAL_STATE_TTL_SECONDS, type SocialClient, type SocialLoginFinish, type SocialLoginOptions, type SocialLoginStart } from './social_login.ts';
export { browserLabel, linkedProviders, type SessionInfo } from './account_sessions.ts';
export { SOCIAL_LOGIN_PROVIDERS, socialProviderTable, type ProviderEndpoints, type SocialLoginProvider, type SocialProfile, type SocialProviderRow } from './social_providers.ts';
export { DynamoDatabase, isConditionFailed, type DynamoCondition, type DynamoIndex, type DynamoItem, type DynamoOptions, type DynamoQuery, type DynamoTableDefinition } from './dynamodb.ts';
export { DynamoMemoryStore } from './dynamo_memory_store.ts';
export { DynamoTransaction, dynamoDatabase, inTransaction, sqlDatabase, sqlTransaction, type MainDatabase, type StoreTransaction } from './main_database.ts';
export type { AuditEvent, AuditPort } from './audit_port.ts';
export {
  OrganizationService,
  checkSessionFits,
  type OrgActor,
  type OrgCall,
  type OrgEvent,
  type OrgTuples,
  type OrganizationServiceOptions,
  type OrgSettingsInput,
  type PublicOrganization,
  type PublicInvitation,
  type PublicScimToken,
  type TxtResolver,
} from './organizations.ts';
export { SqlSsoStore, type SsoConnectionRecord, type SsoConnectionType, type SamlSettings, type OidcSettings } from './sso_store.ts';
export { SsoService, applyGroupRules, type ConnectionInput, type PublicSsoConnection, type SsoProfile } from './sso_connections.ts';
export { SsoLogin, type SsoFinish, type SsoStart } from './sso_login.ts';
export { readIdpMetadata } from './saml_sp.ts';
export { SqlScimStore, type ScimTokenRecord, type ScimUserRow } from './scim_store.ts';
export { ScimService, type ScimCall, type ScimRequest, type ScimResponse } from './scim.ts';
export { ScimError, SCIM_ENTERPRISE, SCIM_GROUP, SCIM_USER } from './scim_document.ts';
export { matches as scimFilterMatches, parseFilter as parseScimFilter, parsePatchPath as parseScimPatchPath, printFilter as printScimFilter, ScimFilterError, type Filter as ScimFilter } from './scim_filter.ts';
export { DEFAULT_ORG_SETTINGS, SqlOrgStore, type OrgSettings, type OrgRecord, type MemberRecord, type TeamRecord, type InvitationRecord, type InvitationStatus, type DomainRecord } from './org_store.ts';
export { BUILTIN_ORG_ROLES, ORG_PERMISSIONS, mergeOrgFragment, orgModelFragment, orgModelFragmentDsl } from './org_model.ts';
export { ORGANIZATIONS_SCOPE, type OrgMemberships } from './org_sessions.ts';
export { RelyingParty, CEREMONY_TIMEOUT_MS, type RelyingPartyOptions } from './webauthn.ts';
export { PasskeyFlows, PASSKEY_LOGIN_METHOD, toPublicPasskey, type CeremonyStart, type PublicPasskey } from './passkey_flows.ts';
export {
  PROVIDER_IDENTITIES_MIGRATION,
  SqlProviderIdentityStore,
  DynamoProviderIdentityStore,
  type ProviderIdentity,
  type ProviderIdentityStore,
} from './provider_identity_store.ts';
export { PASSKEY_MIGRATIONS, SqlPasskeyStore, DynamoPasskeyStore, credentialKey, type PasskeyRecord, type PasskeyStore } from './passkey_store.ts';
