/**
 * Enterprise sign-in connections of an organization (docs/sso.md): the admin
 * API over them, and just-in-time provisioning of the people they sign in.
 *
 * A connection is a SAML 2.0 or OpenID Connect identity provider bound to an
 * organization and to some of its verified domains. The operations are
 * authorized as the rest of the organization API, by an engine check of
 * `can_update` on the organization (its admins and owners; a super-admin acts
 * on any organization).
 *
 * Provisioning, in one transaction with the tuples:
 *
 * | first sign-in | the user (email verified: the organization proved its domain) and the membership with the connection's default role, `organization:O#<role>@user:U` |
 * |---|---|
 * | a group of `group_mapping` with a team | `team:T#member@user:U` (and removed at a later sign-in without that group) |
 * | a group of `group_mapping` with a role | the membership's role (the first matching rule); an owner's role is never changed by a sign-in |
 *
 * An address outside the connection's domains is refused: an identity
 * provider vouches only for its organization's own people.
 */
import { randomUUID } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { StoreTransaction } from './main_database.ts';
import type { OrgCall, OrganizationService, OrgTuples } from './organizations.ts';
import type { OrgRecord, SqlOrgStore } from './org_store.ts';
import type { OidcSettings, SamlSettings, SqlSsoStore, SsoAttributeMapping, SsoConnectionRecord, SsoConnectionType, SsoGroupRule } from './sso_store.ts';
import { emailKey, type UserRecord, type UserStore } from './user_store_types.ts';

const MAX_PAGE = 100;
const MAX_RULES = 200;
const MAX_DOMAINS = 50;
const MAX_XML = 262_144;

const invalid = (message: string, r = { reason: 'invalid_sso_connection' }): LatchkeyError => new LatchkeyError('invalid_argument', message, r);
const notFound = (): LatchkeyError => new LatchkeyError('not_found', 'SSO connection not found', { reason: 'sso_connection_not_found' });

/** SAML attribute names the common identity providers send, used when a mapping leaves one empty. */
export const DEFAULT_SAML_MAPPING: SsoAttributeMapping = {
  email: 'email',
  given_name: 'firstName',
  family_name: 'lastName',
  groups: 'groups',
};
/** ID token / userinfo claims used when an OIDC mapping leaves one empty. */
export const DEFAULT_OIDC_MAPPING: SsoAttributeMapping = { email: 'email', given_name: 'given_name', family_name: 'family_name', groups: 'groups' };

/** The settings of a SAML connection as the API takes them. */
export interface SamlInput {
  idp_metadata_xml?: string | undefined;
  idp_metadata_url?: string | undefined;
  idp_entity_id?: string | undefined;
  idp_sso_url?: string | undefined;
  idp_slo_url?: string | undefined;
  idp_certificate?: string | undefined;
  sign_requests?: boolean | undefined;
  sp_private_key?: string | undefined;
  sp_certificate?: string | undefined;
}

export interface OidcInput {
  issuer?: string | undefined;
  client_id?: string | undefined;
  client_secret?: string | undefined;
  scopes?: readonly string[] | undefined;
}

export interface ConnectionInput {
  name?: string | undefined;
  enabled?: boolean | undefined;
  domains?: readonly string[] | undefined;
  default_role?: string | undefined;
  attribute_mapping?: unknown;
  group_mapping?: unknown;
  saml?: SamlInput | undefined;
  oidc?: OidcInput | undefined;
}

/** The public form of a connection: never a client secret or a private key. */
export interface PublicSsoConnection {
  id: string;
  organization_id: string;
  type: SsoConnectionType;
  name: string;
  enabled: boolean;
  domains: string[];
  default_role?: string;
  attribute_mapping: SsoAttributeMapping;
  group_mapping: SsoGroupRule[];
  saml?: {
    idp_entity_id: string;
    idp_sso_url: string;
    idp_slo_url?: string;
    idp_metadata_url?: string;
    idp_certificates: string[];
    sign_requests: boolean;
    sp_entity_id: string;
    sp_acs_url: string;
    sp_metadata_url: string;
  };
  oidc?: { issuer: string; client_id: string; scopes: string[]; client_secret_set: boolean; redirect_uri: string };
  sign_in_url: string;
  created_at: number;
  updated_at: number;
}

/** What an identity provider said about the person (from a verified assertion or ID token). */
export interface SsoProfile {
  email: string | undefined;
  givenName: string | undefined;
  familyName: string | undefined;
  groups: string[];
  /** The IdP's subject (NameID or `sub`), for the audit log. */
  subject: string;
}

/** Parses IdP metadata (auth/saml_sp.ts, loaded only when a SAML connection is written). */
export type SamlMetadataReader = (xml: string) => Promise<{ entityId: string; ssoUrl: string; sloUrl: string | null; certificates: string[] }>;

export interface SsoServiceOptions {
  organizations: OrganizationService;
  orgStore: SqlOrgStore;
  store: SqlSsoStore;
  users: UserStore;
  /** The server's public base URL (SP entity ids and endpoints are under it). */
  publicUrl: string;
  readMetadata: SamlMetadataReader;
  /** Fetches IdP metadata from its URL (`unavailable` when it cannot). */
  fetchMetadata: (url: string) => Promise<string>;
  nowSeconds: () => number;
}

function str(v: unknown, field: string, max: number): string {
  if (typeof v !== 'string') throw invalid(`${field} must be a string`);
  const t = v.trim();
  if (t.length > max) throw invalid(`${field} must be at most ${max} characters`);
  return t;
}

function httpsUrl(v: string, field: string, allowHttp: boolean): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw invalid(`${field} must be an absolute URL`);
  }
  if (u.protocol !== 'https:' && !(allowHttp && u.protocol === 'http:')) throw invalid(`${field} must be an https URL`);
  return u.toString();
}

/** A certificate as base64 DER on one line (PEM armour and whitespace removed). */
export function certificateBody(pem: string): string {
  const body = pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length < 100) throw invalid('idp_certificate must be an X.509 certificate (PEM or base64 DER)');
  return body;
}

function mappingOf(v: unknown, base: SsoAttributeMapping): SsoAttributeMapping {
  if (v === undefined || v === null) return base;
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid('attribute_mapping must be an object of email, given_name, family_name and groups');
  const out = { ...base };
  for (const [k, value] of Object.entries(v as Record<string, unknown>)) {
    if (!(k in out)) throw invalid(`attribute_mapping has no field ${JSON.stringify(k)}; it maps email, given_name, family_name and groups`);
    const name = str(value, `attribute_mapping.${k}`, 512);
    out[k as keyof SsoAttributeMapping] = name === '' ? base[k as keyof SsoAttributeMapping] : name;
  }
  return out;
}

/** A connection's group rules: what each group the IdP sends means here. */
export interface GroupOutcome {
  teams: Set<string>;
  /** Every team some rule names (the teams this connection manages). */
  managedTeams: Set<string>;
  role: string | undefined;
}

export function applyGroupRules(rules: readonly SsoGroupRule[], groups: readonly string[]): GroupOutcome {
  const have = new Set(groups);
  const out: GroupOutcome = { teams: new Set(), managedTeams: new Set(), role: undefined };
  for (const r of rules) {
    if (r.team_id !== undefined) out.managedTeams.add(r.team_id);
    if (!have.has(r.group)) continue;
    if (r.team_id !== undefined) out.teams.add(r.team_id);
    if (r.role !== undefined && out.role === undefined) out.role = r.role;
  }
  return out;
}

/** The connection service (one per process, with organizations). */
export class SsoService {
  readonly #o: SsoServiceOptions;

  constructor(options: SsoServiceOptions) {
    this.#o = options;
  }

  get publicUrl(): string {
    return this.#o.publicUrl;
  }

  /** The SP entity id of a SAML connection: its metadata URL (stable, unique per connection). */
  spEntityId(id: string): string {
    return `${this.#o.publicUrl}/saml/${id}/metadata`;
  }

  acsUrl(id: string): string {
    return `${this.#o.publicUrl}/saml/${id}/acs`;
  }

  oidcRedirectUri(id: string): string {
    return `${this.#o.publicUrl}/sso/${id}/callback`;
  }

  publicOf(c: SsoConnectionRecord): PublicSsoConnection {
    return {
      id: c.id,
      organization_id: c.organization_id,
      type: c.type,
      name: c.name,
      enabled: c.enabled,
      domains: c.domains,
      ...(c.default_role === null ? {} : { default_role: c.default_role }),
      attribute_mapping: c.attribute_mapping,
      group_mapping: c.group_mapping,
      ...(c.saml === null
        ? {}
        : {
            saml: {
              idp_entity_id: c.saml.idp_entity_id,
              idp_sso_url: c.saml.idp_sso_url,
              ...(c.saml.idp_slo_url === null ? {} : { idp_slo_url: c.saml.idp_slo_url }),
              ...(c.saml.idp_metadata_url === null ? {} : { idp_metadata_url: c.saml.idp_metadata_url }),
              idp_certificates: c.saml.idp_certificates,
              sign_requests: c.saml.sign_requests,
              sp_entity_id: this.spEntityId(c.id),
              sp_acs_url: this.acsUrl(c.id),
              sp_metadata_url: this.spEntityId(c.id),
            },
          }),
      ...(c.oidc === null
        ? {}
        : { oidc: { issuer: c.oidc.issuer, client_id: c.oidc.client_id, scopes: c.oidc.scopes, client_secret_set: c.oidc.client_secret !== '', redirect_uri: this.oidcRedirectUri(c.id) } }),
      sign_in_url: `${this.#o.publicUrl}/sso/${c.id}`,
      created_at: c.created_at,
      updated_at: c.updated_at,
    };
  }

  // ---------------------------------------------------------------- validation

  async #domains(org: OrgRecord, domains: readonly string[] | undefined, fallback: string[]): Promise<string[]> {
    if (domains === undefined) return fallback;
    if (!Array.isArray(domains) || domains.length > MAX_DOMAINS) throw invalid(`domains must be a list of at most ${MAX_DOMAINS} verified domains`);
    const out: string[] = [];
    for (const d of domains) {
      const name = str(d, 'domains', 253).toLowerCase();
      const rec = await this.#o.orgStore.domain(org.id, name);
      if (rec === undefined || rec.verified_at === null) {
        throw new LatchkeyError('failed_precondition', `${name} is not a verified domain of the organization; verify it first (add_organization_domain, verify_organization_domain)`, { reason: 'domain_not_verified' });
      }
      if (!out.includes(name)) out.push(name);
    }
    return out;
  }

  #groupRules(v: unknown, teams: Set<string>): SsoGroupRule[] {
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v) || v.length > MAX_RULES) throw invalid(`group_mapping must be a list of at most ${MAX_RULES} rules`);
    return v.map((r: unknown, i) => {
      if (typeof r !== 'object' || r === null || Array.isArray(r)) throw invalid(`group_mapping[${i}] must be an object {group, team_id?, role?}`);
      const o = r as Record<string, unknown>;
      for (const k of Object.keys(o)) if (!['group', 'team_id', 'role'].includes(k)) throw invalid(`group_mapping[${i}] has no field ${JSON.stringify(k)}`);
      const group = str(o['group'], `group_mapping[${i}].group`, 512);
      if (group === '') throw invalid(`group_mapping[${i}].group is required`);
      const rule: SsoGroupRule = { group };
      if (o['team_id'] !== undefined && o['team_id'] !== '') {
        const t = str(o['team_id'], `group_mapping[${i}].team_id`, 64);
        if (!teams.has(t)) throw new LatchkeyError('failed_precondition', `group_mapping[${i}].team_id is not a team of the organization`, { reason: 'team_not_found' });
        rule.team_id = t;
      }
      if (o['role'] !== undefined && o['role'] !== '') {
        const role = this.#o.organizations.checkRole(str(o['role'], `group_mapping[${i}].role`, 64));
        if (role === 'owner') throw invalid(`group_mapping[${i}].role cannot be owner`);
        rule.role = role;
      }
      if (rule.team_id === undefined && rule.role === undefined) throw invalid(`group_mapping[${i}] names neither a team_id nor a role`);
      return rule;
    });
  }

  async #saml(input: SamlInput | undefined, prev: SamlSettings | null): Promise<SamlSettings> {
    const i = input ?? {};
    const allowHttp = this.#o.publicUrl.startsWith('http://');
    let xml = i.idp_metadata_xml === undefined ? (prev?.idp_metadata_xml ?? null) : i.idp_metadata_xml === '' ? null : i.idp_metadata_xml;
    const url = i.idp_metadata_url === undefined ? (prev?.idp_metadata_url ?? null) : i.idp_metadata_url === '' ? null : httpsUrl(i.idp_metadata_url, 'saml.idp_metadata_url', allowHttp);
    if (url !== null && (i.idp_metadata_url !== undefined || xml === null)) xml = await this.#o.fetchMetadata(url);
    if (xml !== null && xml.length > MAX_XML) throw invalid(`IdP metadata must be at most ${MAX_XML} bytes`);
    const meta = xml === null ? undefined : await this.#o.readMetadata(xml);
    const entityId = i.idp_entity_id !== undefined && i.idp_entity_id !== '' ? str(i.idp_entity_id, 'saml.idp_entity_id', 1024) : (meta?.entityId ?? prev?.idp_entity_id ?? '');
    const ssoUrl = i.idp_sso_url !== undefined && i.idp_sso_url !== '' ? httpsUrl(i.idp_sso_url, 'saml.idp_sso_url', allowHttp) : (meta?.ssoUrl ?? prev?.idp_sso_url ?? '');
    const sloUrl = i.idp_slo_url !== undefined ? (i.idp_slo_url === '' ? null : httpsUrl(i.idp_slo_url, 'saml.idp_slo_url', allowHttp)) : (meta?.sloUrl ?? prev?.idp_slo_url ?? null);
    const certificates = i.idp_certificate !== undefined && i.idp_certificate !== '' ? [certificateBody(i.idp_certificate)] : (meta?.certificates ?? prev?.idp_certificates ?? []);
    if (entityId === '') throw invalid('a SAML connection needs the IdP entity id (saml.idp_entity_id, or metadata)');
    if (ssoUrl === '') throw invalid('a SAML connection needs the IdP single sign-on URL (saml.idp_sso_url, or metadata)');
    if (certificates.length === 0) throw invalid('a SAML connection needs the IdP signing certificate (saml.idp_certificate, or metadata): unsigned assertions are refused');
    const signRequests = i.sign_requests ?? prev?.sign_requests ?? false;
    const key = i.sp_private_key !== undefined ? i.sp_private_key : (prev?.sp_private_key ?? '');
    const cert = i.sp_certificate !== undefined ? i.sp_certificate : (prev?.sp_certificate ?? '');
    if (signRequests && (!/-----BEGIN (RSA )?PRIVATE KEY-----/.test(key) || cert === '')) {
      throw invalid('signed AuthnRequests need saml.sp_private_key (PEM) and saml.sp_certificate');
    }
    if (cert !== '') certificateBody(cert);
    return { idp_metadata_xml: xml, idp_metadata_url: url, idp_entity_id: entityId, idp_sso_url: ssoUrl, idp_slo_url: sloUrl, idp_certificates: certificates, sign_requests: signRequests, sp_private_key: key, sp_certificate: cert };
  }

  #oidc(input: OidcInput | undefined, prev: OidcSettings | null): OidcSettings {
    const i = input ?? {};
    const allowHttp = this.#o.publicUrl.startsWith('http://');
    const issuer = i.issuer !== undefined ? httpsUrl(str(i.issuer, 'oidc.issuer', 1024), 'oidc.issuer', allowHttp).replace(/\/$/, '') : (prev?.issuer ?? '');
    const clientId = i.client_id !== undefined ? str(i.client_id, 'oidc.client_id', 512) : (prev?.client_id ?? '');
    const secret = i.client_secret !== undefined ? str(i.client_secret, 'oidc.client_secret', 1024) : (prev?.client_secret ?? '');
    const scopes = i.scopes !== undefined ? [...new Set(i.scopes.map((x) => str(x, 'oidc.scopes', 128)).filter((x) => x !== ''))] : (prev?.scopes ?? ['openid', 'email', 'profile']);
    if (issuer === '' || clientId === '') throw invalid('an OIDC connection needs oidc.issuer and oidc.client_id');
    if (!scopes.includes('openid')) scopes.unshift('openid');
    return { issuer, client_id: clientId, client_secret: secret, scopes };
  }

  async #teams(orgId: string): Promise<Set<string>> {
    const all = await this.#o.orgStore.teamsWithMembers(orgId);
    return new Set(all.map((t) => t.id));
  }

  // ---------------------------------------------------------------- operations

  /** `add_sso_connection` (`can_update`). */
  async add(call: OrgCall, input: ConnectionInput & { organization_id: string; type: string }): Promise<PublicSsoConnection> {
    const org = await this.#o.organizations.authorize(call, input.organization_id, 'can_update');
    if (input.type !== 'saml' && input.type !== 'oidc') throw invalid('type must be saml or oidc');
    const type: SsoConnectionType = input.type;
    if (type === 'saml' && input.oidc !== undefined) throw invalid('a SAML connection takes saml settings, not oidc');
    if (type === 'oidc' && input.saml !== undefined) throw invalid('an OIDC connection takes oidc settings, not saml');
    const now = this.#o.nowSeconds();
    const name = str(input.name ?? '', 'name', 256);
    const rec: SsoConnectionRecord = {
      id: randomUUID(),
      organization_id: org.id,
      type,
      name: name === '' ? (type === 'saml' ? 'SAML' : 'OpenID Connect') : name,
      enabled: input.enabled ?? true,
      domains: await this.#domains(org, input.domains, []),
      default_role: input.default_role === undefined || input.default_role === '' ? null : this.#defaultRole(input.default_role),
      attribute_mapping: mappingOf(input.attribute_mapping, type === 'saml' ? DEFAULT_SAML_MAPPING : DEFAULT_OIDC_MAPPING),
      group_mapping: this.#groupRules(input.group_mapping, await this.#teams(org.id)),
      saml: type === 'saml' ? await this.#saml(input.saml, null) : null,
      oidc: type === 'oidc' ? this.#oidc(input.oidc, null) : null,
      created_at: now,
      updated_at: now,
    };
    await this.#o.organizations.changeInTransaction(async (tx) => {
      if (!(await this.#o.orgStore.lockOrganization(org.id, tx))) throw new LatchkeyError('not_found', 'organization not found', { reason: 'organization_not_found' });
      await this.#o.store.insert(rec, tx);
      await this.#event(call, tx, 'organization.sso_connection_added', rec);
    });
    return this.publicOf(rec);
  }

  #defaultRole(role: string): string {
    const r = this.#o.organizations.checkRole(role);
    if (r === 'owner') throw invalid('default_role cannot be owner');
    return r;
  }

  async #event(call: OrgCall, tx: StoreTransaction, action: string, rec: SsoConnectionRecord): Promise<void> {
    await this.#o.organizations.recordEvent(call, tx, {
      action,
      webhook: 'sso_connection.changed',
      resourceType: 'sso_connection',
      resourceId: rec.id,
      data: { change: action.slice('organization.sso_connection_'.length), organization_id: rec.organization_id, connection_id: rec.id, type: rec.type, name: rec.name, enabled: rec.enabled, domains: rec.domains },
    });
  }

  /** A connection and its organization, once the caller may manage that organization (`not_found`, `permission_denied`). */
  async #own(call: OrgCall, id: string): Promise<{ rec: SsoConnectionRecord; org: OrgRecord }> {
    const rec = typeof id === 'string' && id !== '' && id.length <= 64 ? await this.#o.store.connection(id) : undefined;
    if (rec === undefined) throw notFound();
    // The check is on the connection's own organization: an admin of another one is refused here.
    const org = await this.#o.organizations.authorize(call, rec.organization_id, 'can_update');
    return { rec, org };
  }

  /** `sso_connection` (`can_update`). */
  async get(call: OrgCall, id: string): Promise<PublicSsoConnection> {
    return this.publicOf((await this.#own(call, id)).rec);
  }

  /** `sso_connections` (`can_update`): the organization's connections, oldest first. */
  async list(call: OrgCall, input: { organization_id: string; pagination?: { page?: number | undefined; limit?: number | undefined } | undefined }) {
    const org = await this.#o.organizations.authorize(call, input.organization_id, 'can_update');
    const pageNo = input.pagination?.page ?? 1;
    const limit = input.pagination?.limit ?? 10;
    if (!Number.isInteger(pageNo) || pageNo < 1 || !Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw invalid(`page must be at least 1 and limit 1 to ${MAX_PAGE}`, { reason: 'invalid_pagination' });
    const r = await this.#o.store.list({ organizationId: org.id, offset: (pageNo - 1) * limit, limit });
    return { connections: r.connections.map((c) => this.publicOf(c)), pagination: { page: pageNo, limit, offset: (pageNo - 1) * limit, total: r.total } };
  }

  /** `update_sso_connection` (`can_update`): unset fields keep their value. */
  async update(call: OrgCall, input: ConnectionInput & { connection_id: string }): Promise<PublicSsoConnection> {
    const { rec: prev, org } = await this.#own(call, input.connection_id);
    if (prev.type === 'saml' && input.oidc !== undefined) throw invalid('a SAML connection takes saml settings, not oidc');
    if (prev.type === 'oidc' && input.saml !== undefined) throw invalid('an OIDC connection takes oidc settings, not saml');
    const name = input.name === undefined ? prev.name : str(input.name, 'name', 256) || prev.name;
    const next: SsoConnectionRecord = {
      ...prev,
      name,
      enabled: input.enabled ?? prev.enabled,
      domains: await this.#domains(org, input.domains, prev.domains),
      default_role: input.default_role === undefined ? prev.default_role : input.default_role === '' ? null : this.#defaultRole(input.default_role),
      attribute_mapping: input.attribute_mapping === undefined ? prev.attribute_mapping : mappingOf(input.attribute_mapping, prev.type === 'saml' ? DEFAULT_SAML_MAPPING : DEFAULT_OIDC_MAPPING),
      group_mapping: input.group_mapping === undefined ? prev.group_mapping : this.#groupRules(input.group_mapping, await this.#teams(org.id)),
      saml: prev.type === 'saml' ? (input.saml === undefined ? prev.saml : await this.#saml(input.saml, prev.saml)) : null,
      oidc: prev.type === 'oidc' ? (input.oidc === undefined ? prev.oidc : this.#oidc(input.oidc, prev.oidc)) : null,
      updated_at: this.#o.nowSeconds(),
    };
    await this.#o.organizations.changeInTransaction(async (tx) => {
      if (!(await this.#o.store.update(next, tx))) throw notFound();
      await this.#event(call, tx, 'organization.sso_connection_updated', next);
    });
    return this.publicOf(next);
  }

  /** `delete_sso_connection` (`can_update`): its sign-in URLs answer not found from then on. */
  async delete(call: OrgCall, id: string): Promise<{ message: string }> {
    const { rec } = await this.#own(call, id);
    await this.#o.organizations.changeInTransaction(async (tx) => {
      if (!(await this.#o.store.delete(rec.id, tx))) throw notFound();
      await this.#event(call, tx, 'organization.sso_connection_deleted', rec);
    });
    return { message: 'SSO connection deleted' };
  }

  // ---------------------------------------------------------------- sign-in

  /** An enabled connection of a live organization, for its sign-in endpoints (`not_found` otherwise, the same for each case). */
  async usable(id: string): Promise<{ connection: SsoConnectionRecord; org: OrgRecord }> {
    const rec = typeof id === 'string' && /^[0-9a-f-]{36}$/.test(id) ? await this.#o.store.connection(id) : undefined;
    const org = rec === undefined ? undefined : await this.#o.orgStore.organization(rec.organization_id);
    if (rec === undefined || org === undefined || !rec.enabled) throw new LatchkeyError('not_found', 'no enabled SSO connection with this id', { reason: 'sso_connection_not_found' });
    return { connection: rec, org };
  }

  /** Home-realm discovery: the enabled connection bound to the email's domain (in the organization that verified it). */
  async forEmail(orgId: string, email: string): Promise<SsoConnectionRecord | undefined> {
    const at = email.lastIndexOf('@');
    const domain = email.slice(at + 1).toLowerCase();
    return (await this.#o.store.ofOrganization(orgId)).find((c) => c.enabled && c.domains.includes(domain));
  }

  /**
   * Just-in-time provisioning: the user of a verified profile, created on
   * first sign-in, and its membership, role and mapped teams brought to what
   * the identity provider says, in one transaction with their tuples.
   * `permission_denied` (`sso_email_domain_not_allowed`) for an address
   * outside the connection's domains; `account_deactivated` /
   * `access_revoked` for such accounts.
   */
  async provision(call: OrgCall, connection: SsoConnectionRecord, org: OrgRecord, profile: SsoProfile): Promise<{ user: UserRecord; created: boolean }> {
    const email = emailKey(profile.email?.trim());
    if (email === undefined) throw new LatchkeyError('permission_denied', 'the identity provider sent no email address', { reason: 'sso_email_missing' });
    const domain = email.slice(email.lastIndexOf('@') + 1);
    if (!connection.domains.includes(domain)) {
      throw new LatchkeyError('permission_denied', `this connection signs in addresses of ${connection.domains.join(', ') || 'no domain'} only`, { reason: 'sso_email_domain_not_allowed' });
    }
    const outcome = applyGroupRules(connection.group_mapping, profile.groups);
    const tuples = await this.#o.organizations.preparedTuples();
    const now = this.#o.nowSeconds();
    const sync = async (userId: string, tx: StoreTransaction, created: boolean): Promise<void> => {
      await this.#membership(call, tx, tuples, connection, org, userId, outcome);
      if (created) {
        await this.#o.organizations.recordEvent(call, tx, {
          action: 'organization.sso_user_provisioned',
          resourceType: 'user',
          resourceId: userId,
          data: { organization_id: org.id, connection_id: connection.id, user_id: userId, email, subject: profile.subject },
        });
      }
    };
    const clip = (v: string | undefined): string | null => (v === undefined || v === '' ? null : [...v].slice(0, 256).join(''));
    const existing = await this.#o.users.findByEmail(email);
    if (existing !== undefined) {
      if (existing.deactivated_at !== null) throw new LatchkeyError('permission_denied', 'this account has been deactivated', { reason: 'account_deactivated' });
      if (existing.revoked_timestamp !== null) throw new LatchkeyError('permission_denied', 'user access has been revoked', { reason: 'access_revoked' });
      const methods = existing.signup_methods.split(',').filter((m) => m !== '');
      const method = connection.type === 'saml' ? 'saml' : 'sso_oidc';
      const user = await this.#o.organizations.changeInTransaction(async (tx) => {
        await sync(existing.id, tx, false);
        return this.#o.users.update(
          existing.id,
          {
            ...(methods.includes(method) ? {} : { signup_methods: [...methods, method].join(',') }),
            ...(existing.email_verified_at === null ? { email_verified_at: now } : {}),
            ...(profile.givenName !== undefined ? { given_name: clip(profile.givenName) } : {}),
            ...(profile.familyName !== undefined ? { family_name: clip(profile.familyName) } : {}),
          },
          { transaction: tx },
        );
      });
      return { user, created: false };
    }
    const user = await this.#o.users.create(
      {
        email,
        email_verified_at: now,
        password: null,
        signup_methods: connection.type === 'saml' ? 'saml' : 'sso_oidc',
        roles: [],
        given_name: clip(profile.givenName),
        family_name: clip(profile.familyName),
      },
      { within: async (u, tx) => sync(u.id, tx, true) },
    );
    await tuples.refresh();
    return { user, created: true };
  }

  /** The membership, its role and the connection's teams, as the groups say (inside `tx`). */
  async #membership(call: OrgCall, tx: StoreTransaction, tuples: OrgTuples, c: SsoConnectionRecord, org: OrgRecord, userId: string, g: GroupOutcome): Promise<void> {
    const store = this.#o.orgStore;
    const now = this.#o.nowSeconds();
    const m = await store.member(org.id, userId, tx);
    const roleTuple = (role: string) => ({ object: `organization:${org.id}`, relation: role, user: `user:${userId}` });
    if (m === undefined) {
      const role = g.role ?? c.default_role ?? this.#o.organizations.defaultRole(org);
      await store.insertMember({ organization_id: org.id, user_id: userId, role, created_at: now, updated_at: now }, tx);
      await tuples.ensure([], [roleTuple(role)], tx);
      await this.#o.organizations.recordEvent(call, tx, { action: 'organization.member_added', webhook: 'member.added', resourceType: 'organization', resourceId: org.id, data: { organization_id: org.id, user_id: userId, role, via: `sso:${c.id}` } });
    } else if (g.role !== undefined && g.role !== m.role && m.role !== 'owner') {
      await store.updateMemberRole(org.id, userId, g.role, tx);
      await tuples.ensure([roleTuple(m.role)], [roleTuple(g.role)], tx);
      await this.#o.organizations.recordEvent(call, tx, { action: 'organization.member_role_changed', webhook: 'member.role_changed', resourceType: 'organization', resourceId: org.id, data: { organization_id: org.id, user_id: userId, role: g.role, previous_role: m.role, via: `sso:${c.id}` } });
    }
    const current = new Set(await store.teamsOfMember(org.id, userId, tx));
    const live = await this.#teams(org.id);
    const add = [...g.teams].filter((t) => live.has(t) && !current.has(t));
    const remove = [...g.managedTeams].filter((t) => current.has(t) && !g.teams.has(t));
    const teamTuple = (t: string) => ({ object: `team:${t}`, relation: 'member', user: `user:${userId}` });
    for (const t of add) await store.insertTeamMember(t, userId, tx);
    for (const t of remove) await store.deleteTeamMember(t, userId, tx);
    if (add.length + remove.length > 0) {
      await tuples.ensure(remove.map(teamTuple), add.map(teamTuple), tx);
      await this.#o.organizations.recordEvent(call, tx, { action: 'organization.sso_teams_synced', resourceType: 'user', resourceId: userId, data: { organization_id: org.id, connection_id: c.id, user_id: userId, added_teams: add, removed_teams: remove } });
    }
  }
}
