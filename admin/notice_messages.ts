/**
 * The texts the server sends that are not email templates, in the languages
 * of the built-in templates (admin/email_messages.ts): the SMS that carries a
 * one-time code, and the mail inviting someone into an organization. The
 * language is picked by `userMailLanguage` (the user's saved one, else the
 * request's); a language without texts falls back to English. `{org}`,
 * `{code}` and `{role}` are filled as plain text; the caller escapes what
 * goes into HTML.
 */

interface NoticeWords {
  /** The SMS of a one-time code (`{code}`, `{org}`). */
  readonly smsCode: string;
  /** The invitation mail's subject (`{org}`). */
  readonly inviteSubject: string;
  /** Its first line (`{org}` in bold, `{role}`), HTML. */
  readonly inviteBody: string;
  /** The text of its link. */
  readonly inviteAccept: string;
}

const NOTICE_WORDS: Readonly<Record<string, NoticeWords>> = Object.freeze({
  en: {
    smsCode: '{code} is your {org} verification code. It expires in 1 minute.',
    inviteSubject: 'You are invited to {org}',
    inviteBody: 'You are invited to join <b>{org}</b> as {role}.',
    inviteAccept: 'Accept the invitation',
  },
  de: {
    smsCode: '{code} ist Ihr Bestätigungscode für {org}. Er läuft in 1 Minute ab.',
    inviteSubject: 'Einladung zu {org}',
    inviteBody: 'Sie sind eingeladen, <b>{org}</b> als {role} beizutreten.',
    inviteAccept: 'Einladung annehmen',
  },
  fr: {
    smsCode: '{code} est votre code de vérification {org}. Il expire dans 1 minute.',
    inviteSubject: 'Invitation à rejoindre {org}',
    inviteBody: 'Vous êtes invité à rejoindre <b>{org}</b> en tant que {role}.',
    inviteAccept: 'Accepter l’invitation',
  },
  es: {
    smsCode: '{code} es tu código de verificación de {org}. Caduca en 1 minuto.',
    inviteSubject: 'Invitación a {org}',
    inviteBody: 'Te han invitado a unirte a <b>{org}</b> como {role}.',
    inviteAccept: 'Aceptar la invitación',
  },
  ja: {
    smsCode: '{org} の確認コードは {code} です。1 分で期限切れになります。',
    inviteSubject: '{org} への招待',
    inviteBody: '<b>{org}</b> に {role} として招待されました。',
    inviteAccept: '招待を受ける',
  },
  ar: {
    smsCode: '{code} هو رمز التحقق الخاص بك في {org}. تنتهي صلاحيته خلال دقيقة واحدة.',
    inviteSubject: 'دعوة للانضمام إلى {org}',
    inviteBody: 'دُعيت للانضمام إلى <b>{org}</b> بدور {role}.',
    inviteAccept: 'قبول الدعوة',
  },
});

/** The languages that have every notice, English first. */
export const NOTICE_LANGUAGES: readonly string[] = Object.keys(NOTICE_WORDS);

const fill = (text: string, values: Readonly<Record<string, string>>): string => text.replace(/\{(\w+)\}/g, (whole, k: string) => values[k] ?? whole);

/** The SMS carrying a one-time code, in `language`. */
export function smsCodeText(language: string, code: string, org: string): string {
  return fill((NOTICE_WORDS[language] ?? NOTICE_WORDS['en']!).smsCode, { code, org });
}

/**
 * The mail inviting `role` into an organization, in `language`. `org` and
 * `role` are plain text (escaped here for the HTML); `url` is the link.
 */
export function invitationMail(language: string, o: { org: string; role: string; url: string }): { subject: string; html: string } {
  const w = NOTICE_WORDS[language] ?? NOTICE_WORDS['en']!;
  const esc = (v: string) => v.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
  return {
    subject: fill(w.inviteSubject, { org: o.org }),
    html: `<p>${fill(w.inviteBody, { org: esc(o.org), role: esc(o.role) })}</p><p><a href="${esc(o.url)}">${esc(w.inviteAccept)}</a></p>`,
  };
}
