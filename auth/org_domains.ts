/**
 * Verified domains and home-realm discovery (docs/organizations.md,
 * "Domains and home-realm discovery"): an organization proves a domain by a
 * DNS TXT record (looked up through the injectable resolver), at most one
 * organization holds a domain verified, and `discover_organization` answers
 * which organization, and which sign-in rules, an email address meets.
 */
import { randomBytes } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import { invalid, orgNotFound, type OrgCall, type OrgCore } from './org_core.ts';
import type { DomainRecord } from './org_store.ts';
import { normalizeEmail } from './user_store_types.ts';

const TXT_PREFIX = '_latchkey-verification';
const TXT_VALUE_PREFIX = 'latchkey-verification=';
const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/;

/** The domain operations. */
export class OrgDomains {
  readonly #c: OrgCore;

  constructor(core: OrgCore) {
    this.#c = core;
  }

  #domain(domain: string): string {
    const d = domain.trim().toLowerCase().replace(/\.$/, '');
    if (!DOMAIN.test(d)) throw invalid('not a domain name', 'invalid_domain');
    return d;
  }

  #publicDomain(d: DomainRecord) {
    return {
      organization_id: d.organization_id,
      domain: d.domain,
      verified: d.verified_at !== null,
      ...(d.verified_at === null ? {} : { verified_at: d.verified_at }),
      txt_record_name: `${TXT_PREFIX}.${d.domain}`,
      txt_record_value: `${TXT_VALUE_PREFIX}${d.verification_token}`,
    };
  }

  /** `add_organization_domain` (`can_update`): the TXT record to publish; adding a known domain again answers its record. */
  async addDomain(call: OrgCall, input: { organization_id: string; domain: string }) {
    const org = await this.#c.live(input.organization_id);
    await this.#c.require(call, org.id, 'can_update');
    const domain = this.#domain(input.domain);
    const known = await this.#c.o.store.domain(org.id, domain);
    if (known !== undefined) return this.#publicDomain(known);
    const d: DomainRecord = { organization_id: org.id, domain, verification_token: randomBytes(24).toString('hex'), verified_at: null, created_at: this.#c.o.nowSeconds() };
    await this.#c.change(async (tx) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      await this.#c.o.store.insertDomain(d, tx);
      await this.#c.record(call, tx, { action: 'organization.domain_added', resourceType: 'domain', resourceId: domain, data: { organization_id: org.id, domain } });
    });
    return this.#publicDomain(d);
  }

  /**
   * `verify_organization_domain` (`can_update`): looks up the TXT records of
   * `_latchkey-verification.<domain>`; one equal to the expected value
   * verifies the domain (`failed_precondition`, `domain_not_verified`,
   * otherwise). A domain verified by another organization: `already_exists`
   * (`domain_taken`).
   */
  async verifyDomain(call: OrgCall, input: { organization_id: string; domain: string }) {
    const org = await this.#c.live(input.organization_id);
    await this.#c.require(call, org.id, 'can_update');
    const domain = this.#domain(input.domain);
    const d = await this.#c.o.store.domain(org.id, domain);
    if (d === undefined) throw new LatchkeyError('not_found', 'the domain was not added to this organization', { reason: 'domain_not_found' });
    if (d.verified_at !== null) return this.#publicDomain(d);
    let records: string[][];
    try {
      records = await this.#c.o.resolveTxt(`${TXT_PREFIX}.${domain}`);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ENOTFOUND' || code === 'ENODATA') records = [];
      else throw new LatchkeyError('unavailable', 'the DNS lookup failed; try again', { reason: 'dns_unavailable', cause: err });
    }
    const expected = `${TXT_VALUE_PREFIX}${d.verification_token}`;
    if (!records.some((chunks) => chunks.join('') === expected)) {
      throw new LatchkeyError('failed_precondition', `no TXT record ${expected} at ${TXT_PREFIX}.${domain}`, { reason: 'domain_not_verified' });
    }
    await this.#c.change(async (tx) => {
      if (!(await this.#c.o.store.lockOrganization(org.id, tx))) throw orgNotFound();
      if (!(await this.#c.o.store.verifyDomain(org.id, domain, tx))) throw new LatchkeyError('already_exists', 'another organization has verified this domain', { reason: 'domain_taken' });
      await this.#c.record(call, tx, { action: 'organization.domain_verified', resourceType: 'domain', resourceId: domain, data: { organization_id: org.id, domain } });
    });
    return this.#publicDomain({ ...d, verified_at: this.#c.o.nowSeconds() });
  }

  /**
   * `discover_organization` (home-realm discovery): the organization that
   * verified the email's domain, with the sign-in methods it accepts.
   */
  async discover(email: string): Promise<Record<string, unknown>> {
    const e = normalizeEmail(email) ?? '';
    const at = e.lastIndexOf('@');
    if (at <= 0) throw invalid('not an email address', 'invalid_email');
    const org = await this.#c.o.store.organizationOfVerifiedDomain(e.slice(at + 1));
    if (org === undefined) return { found: false, allowed_sign_in_methods: [], required_mfa: false, auto_join: false };
    return {
      found: true,
      organization_id: org.id,
      slug: org.slug,
      name: org.name,
      ...(org.logo === null ? {} : { logo: org.logo }),
      allowed_sign_in_methods: org.settings.allowed_sign_in_methods,
      required_mfa: org.settings.required_mfa,
      auto_join: org.settings.auto_join_verified_domains,
    };
  }
}
