/**
 * Email templates: at most one stored template per mail event and language
 * (the language `''` stands for every language), validated by rendering it,
 * with a built-in default for every event in each language of
 * email_messages.ts, so a mail can always be sent. A mail in language L uses
 * the stored template of L, else the stored template for every language,
 * else the built-in default in L (English when L has none).
 *
 * Template syntax is deliberately tiny: `{{ user.given_name }}` inserts a
 * value HTML-escaped (a leading dot, `{{ .user.email }}`, is accepted too, so
 * templates written for Go's html/template placeholders keep working).
 * Values come only from the render data: `user.*` (public user fields),
 * `organization.name`, `organization.logo`, `verification_url`, `otp`.
 * There is no code execution and no raw insertion.
 */
import { randomUUID } from 'node:crypto';
import type { SqlDatabase } from '../engine/sql/sql_database.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { normalizePagination, type Pagination, type PaginationInput } from './pagination.ts';
import { countOf, exec, num, select, str, type Row } from './sql.ts';
import { emailWords, type MailEvent } from './email_messages.ts';

/** The mail events a template can be defined for. */
export const EMAIL_TEMPLATE_EVENTS = [
  'basic_auth_signup',
  'magic_link_login',
  'update_email',
  'forgot_password',
  'verify_otp',
  'invite_member',
] as const;
export type EmailTemplateEvent = (typeof EMAIL_TEMPLATE_EVENTS)[number];
/** The catalogue's events (email_messages.ts) are exactly these: the type check fails otherwise. */
const EVENTS_AGREE: [EmailTemplateEvent] extends [MailEvent] ? ([MailEvent] extends [EmailTemplateEvent] ? true : never) : never = true;
void EVENTS_AGREE;

/** A stored template. Times are unix seconds. */
export interface EmailTemplate {
  id: string;
  event_name: string;
  /** The language the template is for (a primary BCP 47 subtag such as `de`), `''` for every language. */
  language: string;
  subject: string;
  template: string;
  design: string;
  created_at: number;
  updated_at: number;
}

/** What a template is rendered with. */
export interface EmailRenderData {
  user: Record<string, unknown>;
  organization: { name: string; logo: string };
  verification_url?: string | undefined;
  otp?: string | undefined;
}

/** A rendered mail. */
export interface RenderedEmail {
  subject: string;
  html: string;
}

const ROOTS = new Set(['user', 'organization', 'verification_url', 'otp']);
const PLACEHOLDER = /\{\{\s*\.?([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}\}/g;

const layout = (body: string): string =>
  `<!doctype html><html><body style="font-family:sans-serif">` +
  `<p><strong>{{ organization.name }}</strong></p>${body}</body></html>`;

/** The built-in template of an event in a language (English when the language has none): its words from email_messages.ts in the layout. */
export function defaultTemplate(event: EmailTemplateEvent, language = 'en'): { subject: string; template: string } {
  const words = emailWords(event, language);
  return { subject: words.subject, template: layout(words.greeting + words.body) };
}

/** Built-in templates in English, used when none is stored for the event. */
export const DEFAULT_EMAIL_TEMPLATES: Readonly<Record<EmailTemplateEvent, { subject: string; template: string }>> = Object.freeze(
  Object.fromEntries(EMAIL_TEMPLATE_EVENTS.map((event) => [event, defaultTemplate(event)])) as Record<EmailTemplateEvent, { subject: string; template: string }>,
);

const SAMPLE: EmailRenderData = {
  user: { id: 'sample', email: 'sample@example.com', given_name: 'Sample', family_name: 'User' },
  organization: { name: 'Example', logo: '' },
  verification_url: 'https://example.com/verify?token=sample',
  otp: '123456',
};

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function lookup(data: EmailRenderData, path: string): string {
  let cur: unknown = data;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, part)) return '';
    cur = (cur as Record<string, unknown>)[part];
  }
  if (cur === null || cur === undefined) return '';
  return Array.isArray(cur) ? cur.join(', ') : typeof cur === 'object' ? '' : String(cur);
}

function invalidTemplate(message: string): LatchkeyError {
  return new LatchkeyError('invalid_argument', message, { reason: 'invalid_template' });
}

/**
 * Checks a template text: every `{{` must open a well-formed placeholder
 * whose root is a known variable. Throws `invalid_argument` /
 * `invalid_template`.
 */
export function validateTemplateText(text: string, what: string): void {
  const stripped = text.replace(PLACEHOLDER, (_m, path: string) => {
    const root = path.split('.')[0]!;
    if (!ROOTS.has(root)) throw invalidTemplate(`${what}: unknown variable ${path}`);
    return '';
  });
  if (stripped.includes('{{') || stripped.includes('}}')) throw invalidTemplate(`${what}: malformed placeholder`);
}

/** Renders a template text: HTML-escaped (`html`) or plain (`text`, for subjects). */
export function renderTemplateText(text: string, data: EmailRenderData, mode: 'html' | 'text'): string {
  return text.replace(PLACEHOLDER, (_m, path: string) => {
    const v = lookup(data, path);
    return mode === 'html' ? escapeHtml(v) : v.replace(/[\r\n]/g, ' ');
  });
}

function checkEvent(name: string): EmailTemplateEvent {
  if (!(EMAIL_TEMPLATE_EVENTS as readonly string[]).includes(name)) {
    throw new LatchkeyError('invalid_argument', `unknown event name; expected one of ${EMAIL_TEMPLATE_EVENTS.join(', ')}`, {
      reason: 'invalid_event_name',
    });
  }
  return name as EmailTemplateEvent;
}

/**
 * A template's language: `''` (every language) or a primary BCP 47 language subtag, two or three
 * letters (ISO 639), lower-cased. Throws `invalid_argument` (`invalid_language`).
 */
function checkLanguage(language: string | undefined): string {
  if (language === undefined || language === '') return '';
  const tag = language.toLowerCase();
  if (!/^[a-z]{2,3}$/.test(tag)) {
    throw new LatchkeyError('invalid_argument', 'language must be a two- or three-letter language code such as de, or empty for every language', { reason: 'invalid_language' });
  }
  return tag;
}

function checkContent(subject: string, template: string): void {
  if (typeof subject !== 'string' || subject.trim() === '' || subject.length > 512) {
    throw invalidTemplate('subject must be 1 to 512 characters');
  }
  if (typeof template !== 'string' || template.trim() === '' || template.length > 60_000) {
    throw invalidTemplate('template must be 1 to 60000 characters');
  }
  validateTemplateText(subject, 'subject');
  validateTemplateText(template, 'template');
  // "Validated by rendering": the sample render must succeed too.
  renderTemplateText(subject, SAMPLE, 'text');
  renderTemplateText(template, SAMPLE, 'html');
}

function toTemplate(r: Row): EmailTemplate {
  return {
    id: str(r['id']),
    event_name: str(r['event_name']),
    language: str(r['language'] ?? ''),
    subject: str(r['subject']),
    template: str(r['template']),
    design: str(r['design']),
    created_at: Math.floor(num(r['created_at']) / 1000),
    updated_at: Math.floor(num(r['updated_at']) / 1000),
  };
}

export interface EmailTemplatesOptions {
  /** The SQL connection (the store is then {@link SqlEmailTemplateStore}); ignored when `store` is given. */
  sequelize?: SqlDatabase | undefined;
  /** Where templates live (e.g. the DynamoDB store). */
  store?: EmailTemplateStore | undefined;
  clock?: () => number;
}

/**
 * Where email templates live: rows with the columns of the SQL table (times
 * unix ms). At most one template per event and language, enforced
 * atomically by the store: `insert` and `update` answer false when another
 * template holds the event in that language.
 */
export interface EmailTemplateStore {
  byId(id: string): Promise<Row | undefined>;
  /** The template of an event in a language (`''`: the one for every language). */
  byEvent(event: string, language: string): Promise<Row | undefined>;
  insert(row: Row): Promise<boolean>;
  /** Writes the template's fields but `created_at`; `previous` is its event and language before the change. */
  update(row: Row, previous: { event: string; language: string }): Promise<boolean>;
  delete(row: Row): Promise<void>;
  /** Templates oldest first (`created_at`, then `id`), a page and the total. */
  list(limit: number, offset: number): Promise<{ rows: Row[]; total: number }>;
}

/** Templates in the `email_templates` table (unique index on `event_name`, `language`). */
export class SqlEmailTemplateStore implements EmailTemplateStore {
  readonly #db: SqlDatabase;

  constructor(sequelize: SqlDatabase) {
    this.#db = sequelize;
  }

  async byId(id: string): Promise<Row | undefined> {
    return (await select(this.#db, 'SELECT * FROM email_templates WHERE id = ?', [id]))[0];
  }

  async byEvent(event: string, language: string): Promise<Row | undefined> {
    return (await select(this.#db, 'SELECT * FROM email_templates WHERE event_name = ? AND language = ?', [event, language]))[0];
  }

  async insert(r: Row): Promise<boolean> {
    try {
      await exec(this.#db, 'INSERT INTO email_templates (id, event_name, language, subject, template, design, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', [
        r['id'],
        r['event_name'],
        r['language'],
        r['subject'],
        r['template'],
        r['design'],
        r['created_at'],
        r['updated_at'],
      ]);
      return true;
    } catch (err) {
      if ((err as { name?: string }).name === 'SequelizeUniqueConstraintError') return false;
      throw err;
    }
  }

  async update(r: Row): Promise<boolean> {
    try {
      await exec(this.#db, 'UPDATE email_templates SET event_name = ?, language = ?, subject = ?, template = ?, design = ?, updated_at = ? WHERE id = ?', [
        r['event_name'],
        r['language'],
        r['subject'],
        r['template'],
        r['design'],
        r['updated_at'],
        r['id'],
      ]);
      return true;
    } catch (err) {
      if ((err as { name?: string }).name === 'SequelizeUniqueConstraintError') return false;
      throw err;
    }
  }

  async delete(r: Row): Promise<void> {
    await exec(this.#db, 'DELETE FROM email_templates WHERE id = ?', [r['id']]);
  }

  async list(limit: number, offset: number): Promise<{ rows: Row[]; total: number }> {
    const total = countOf(await select(this.#db, 'SELECT COUNT(*) AS n FROM email_templates'));
    const rows = await select(this.#db, 'SELECT * FROM email_templates ORDER BY created_at, id LIMIT ? OFFSET ?', [limit, offset]);
    return { rows, total };
  }
}

/** Stored email templates with built-in defaults. */
export class EmailTemplates {
  readonly #db: EmailTemplateStore;
  readonly #clock: () => number;

  constructor(options: EmailTemplatesOptions) {
    this.#db = options.store ?? new SqlEmailTemplateStore(options.sequelize as SqlDatabase);
    this.#clock = options.clock ?? Date.now;
  }

  /**
   * Stores the template of an event in a language (none or `''`: every
   * language). Throws `invalid_argument` (`invalid_event_name`,
   * `invalid_language`, `invalid_template`) or `already_exists`
   * (`email_template_exists`) when the event already has one in that
   * language.
   */
  async add(input: { event_name: string; language?: string | undefined; subject: string; template: string; design?: string | undefined }): Promise<EmailTemplate> {
    const event = checkEvent(input.event_name);
    const language = checkLanguage(input.language);
    checkContent(input.subject, input.template);
    if (await this.#db.byEvent(event, language)) throw this.#exists();
    const id = randomUUID();
    const now = this.#clock();
    const row = { id, event_name: event, language, subject: input.subject, template: input.template, design: input.design ?? '', created_at: now, updated_at: now };
    if (!(await this.#db.insert(row))) throw this.#exists();
    return this.#byId(id);
  }

  #exists(): LatchkeyError {
    return new LatchkeyError('already_exists', 'an email template for this event and language already exists', { reason: 'email_template_exists' });
  }

  async #byId(id: string): Promise<EmailTemplate> {
    const row = await this.#db.byId(String(id));
    if (!row) throw new LatchkeyError('not_found', 'email template not found', { reason: 'email_template_not_found' });
    return toTemplate(row);
  }

  /** Changes the given fields. Throws `not_found` and the errors of {@link add}. */
  async update(input: { id: string; event_name?: string | undefined; language?: string | undefined; subject?: string | undefined; template?: string | undefined; design?: string | undefined }): Promise<EmailTemplate> {
    const cur = await this.#byId(input.id);
    const event = input.event_name === undefined ? cur.event_name : checkEvent(input.event_name);
    const language = input.language === undefined ? cur.language : checkLanguage(input.language);
    const subject = input.subject ?? cur.subject;
    const template = input.template ?? cur.template;
    checkContent(subject, template);
    if ((event !== cur.event_name || language !== cur.language) && (await this.#db.byEvent(event, language))) throw this.#exists();
    const row = {
      id: cur.id,
      event_name: event,
      language,
      subject,
      template,
      design: input.design ?? cur.design,
      updated_at: this.#clock(),
    };
    if (!(await this.#db.update(row, { event: cur.event_name, language: cur.language }))) throw this.#exists();
    return this.#byId(cur.id);
  }

  /** Deletes a template (the event falls back to its default). Throws `not_found`. */
  async delete(id: string): Promise<EmailTemplate> {
    const cur = await this.#byId(id);
    await this.#db.delete({ id: cur.id, event_name: cur.event_name, language: cur.language });
    return cur;
  }

  /** Stored templates, oldest first. */
  async list(pagination?: PaginationInput | null): Promise<{ email_templates: EmailTemplate[]; pagination: Pagination }> {
    const p = normalizePagination(pagination);
    const { rows, total } = await this.#db.list(p.limit, p.offset);
    return { email_templates: rows.map(toTemplate), pagination: { ...p, total } };
  }

  /**
   * Renders the mail of `event` for a recipient who reads `language`: the
   * stored template of that language, else the stored template for every
   * language, else the built-in default in `language` (English when it has
   * none).
   */
  async render(event: EmailTemplateEvent, data: EmailRenderData, language = 'en'): Promise<RenderedEmail> {
    checkEvent(event);
    const tag = /^[a-z]{2,3}$/.test(language) ? language : '';
    const row = (tag === '' ? undefined : await this.#db.byEvent(event, tag)) ?? (await this.#db.byEvent(event, ''));
    const source = row ? { subject: str(row['subject']), template: str(row['template']) } : defaultTemplate(event, language);
    return {
      subject: renderTemplateText(source.subject, data, 'text'),
      html: renderTemplateText(source.template, data, 'html'),
    };
  }
}
