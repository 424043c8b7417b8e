/**
 * The message catalogues of the built-in email templates, in the shape of the
 * pages' catalogues: per language (BCP 47 tag, English first and the
 * reference), one record of message key to text. A mail's built-in template is
 * its event's subject, and the layout of email_templates.ts around the
 * greeting (every mail but the invitation, which is not addressed to a known
 * user) and the event's body. Texts are template text: `{{ … }}` placeholders
 * are filled, HTML-escaped, at render time. Each catalogue's type requires
 * exactly the English keys.
 */
/** The events of `EMAIL_TEMPLATE_EVENTS` (email_templates.ts checks that the two agree). */
export type MailEvent = 'basic_auth_signup' | 'magic_link_login' | 'update_email' | 'forgot_password' | 'verify_otp' | 'invite_member';

/** English, the reference. */
const en = {
  greeting: '<p>Hello {{ user.given_name }},</p>',
  basicAuthSignupSubject: 'Verify your email address',
  basicAuthSignupBody: '<p>Confirm your email address: <a href="{{ verification_url }}">verify email</a>.</p>',
  magicLinkLoginSubject: 'Your sign-in link',
  magicLinkLoginBody: '<p><a href="{{ verification_url }}">Sign in</a>. The link works once.</p>',
  updateEmailSubject: 'Confirm your new email address',
  updateEmailBody: '<p>Confirm this address: <a href="{{ verification_url }}">confirm</a>.</p>',
  forgotPasswordSubject: 'Reset your password',
  forgotPasswordBody: '<p><a href="{{ verification_url }}">Reset your password</a>. Ignore this mail if you did not ask for it.</p>',
  verifyOtpSubject: 'Your one-time code',
  verifyOtpBody: '<p>Your code is <strong>{{ otp }}</strong>. It expires shortly.</p>',
  inviteMemberSubject: 'You are invited',
  inviteMemberBody: '<p>You have been invited to {{ organization.name }}.</p><p><a href="{{ verification_url }}">Accept the invitation</a>.</p>',
} as const;

export type EmailMessageKey = keyof typeof en;
export type EmailMessages = Readonly<Record<EmailMessageKey, string>>;

/** German. */
const de: EmailMessages = {
  greeting: '<p>Hallo {{ user.given_name }},</p>',
  basicAuthSignupSubject: 'Bestätigen Sie Ihre E-Mail-Adresse',
  basicAuthSignupBody: '<p>Bestätigen Sie Ihre E-Mail-Adresse: <a href="{{ verification_url }}">E-Mail bestätigen</a>.</p>',
  magicLinkLoginSubject: 'Ihr Anmeldelink',
  magicLinkLoginBody: '<p><a href="{{ verification_url }}">Anmelden</a>. Der Link gilt einmal.</p>',
  updateEmailSubject: 'Bestätigen Sie Ihre neue E-Mail-Adresse',
  updateEmailBody: '<p>Bestätigen Sie diese Adresse: <a href="{{ verification_url }}">bestätigen</a>.</p>',
  forgotPasswordSubject: 'Setzen Sie Ihr Passwort zurück',
  forgotPasswordBody: '<p><a href="{{ verification_url }}">Passwort zurücksetzen</a>. Ignorieren Sie diese E-Mail, wenn Sie das nicht angefordert haben.</p>',
  verifyOtpSubject: 'Ihr Einmalcode',
  verifyOtpBody: '<p>Ihr Code lautet <strong>{{ otp }}</strong>. Er läuft in Kürze ab.</p>',
  inviteMemberSubject: 'Sie sind eingeladen',
  inviteMemberBody: '<p>Sie wurden zu {{ organization.name }} eingeladen.</p><p><a href="{{ verification_url }}">Einladung annehmen</a>.</p>',
};

/** French. */
const fr: EmailMessages = {
  greeting: '<p>Bonjour {{ user.given_name }},</p>',
  basicAuthSignupSubject: 'Confirmez votre adresse e-mail',
  basicAuthSignupBody: '<p>Confirmez votre adresse e-mail : <a href="{{ verification_url }}">confirmer l’adresse</a>.</p>',
  magicLinkLoginSubject: 'Votre lien de connexion',
  magicLinkLoginBody: '<p><a href="{{ verification_url }}">Se connecter</a>. Le lien ne sert qu’une fois.</p>',
  updateEmailSubject: 'Confirmez votre nouvelle adresse e-mail',
  updateEmailBody: '<p>Confirmez cette adresse : <a href="{{ verification_url }}">confirmer</a>.</p>',
  forgotPasswordSubject: 'Réinitialisez votre mot de passe',
  forgotPasswordBody: '<p><a href="{{ verification_url }}">Réinitialiser le mot de passe</a>. Ignorez ce message si vous n’en êtes pas à l’origine.</p>',
  verifyOtpSubject: 'Votre code à usage unique',
  verifyOtpBody: '<p>Votre code est <strong>{{ otp }}</strong>. Il expire bientôt.</p>',
  inviteMemberSubject: 'Vous êtes invité',
  inviteMemberBody: '<p>Vous êtes invité à rejoindre {{ organization.name }}.</p><p><a href="{{ verification_url }}">Accepter l’invitation</a>.</p>',
};

/** Spanish. */
const es: EmailMessages = {
  greeting: '<p>Hola, {{ user.given_name }}:</p>',
  basicAuthSignupSubject: 'Verifica tu dirección de correo',
  basicAuthSignupBody: '<p>Confirma tu dirección de correo: <a href="{{ verification_url }}">verificar correo</a>.</p>',
  magicLinkLoginSubject: 'Tu enlace de inicio de sesión',
  magicLinkLoginBody: '<p><a href="{{ verification_url }}">Iniciar sesión</a>. El enlace sirve una vez.</p>',
  updateEmailSubject: 'Confirma tu nueva dirección de correo',
  updateEmailBody: '<p>Confirma esta dirección: <a href="{{ verification_url }}">confirmar</a>.</p>',
  forgotPasswordSubject: 'Restablece tu contraseña',
  forgotPasswordBody: '<p><a href="{{ verification_url }}">Restablecer la contraseña</a>. Ignora este correo si no lo pediste.</p>',
  verifyOtpSubject: 'Tu código de un solo uso',
  verifyOtpBody: '<p>Tu código es <strong>{{ otp }}</strong>. Caduca en breve.</p>',
  inviteMemberSubject: 'Tienes una invitación',
  inviteMemberBody: '<p>Te han invitado a {{ organization.name }}.</p><p><a href="{{ verification_url }}">Aceptar la invitación</a>.</p>',
};

/** Japanese. */
const ja: EmailMessages = {
  greeting: '<p>{{ user.given_name }} さん</p>',
  basicAuthSignupSubject: 'メールアドレスの確認',
  basicAuthSignupBody: '<p>メールアドレスを確認してください: <a href="{{ verification_url }}">メールを確認</a>。</p>',
  magicLinkLoginSubject: 'サインイン用リンク',
  magicLinkLoginBody: '<p><a href="{{ verification_url }}">サインイン</a>。このリンクは 1 回だけ使えます。</p>',
  updateEmailSubject: '新しいメールアドレスの確認',
  updateEmailBody: '<p>このアドレスを確認してください: <a href="{{ verification_url }}">確認</a>。</p>',
  forgotPasswordSubject: 'パスワードの再設定',
  forgotPasswordBody: '<p><a href="{{ verification_url }}">パスワードを再設定</a>。心当たりがない場合は、このメールを無視してください。</p>',
  verifyOtpSubject: 'ワンタイムコード',
  verifyOtpBody: '<p>コードは <strong>{{ otp }}</strong> です。まもなく期限切れになります。</p>',
  inviteMemberSubject: '招待が届いています',
  inviteMemberBody: '<p>{{ organization.name }} に招待されました。</p><p><a href="{{ verification_url }}">招待を受ける</a>。</p>',
};

/** Arabic. */
const ar: EmailMessages = {
  greeting: '<p>مرحبًا {{ user.given_name }}،</p>',
  basicAuthSignupSubject: 'تأكيد عنوان بريدك الإلكتروني',
  basicAuthSignupBody: '<p>أكّد عنوان بريدك الإلكتروني: <a href="{{ verification_url }}">تأكيد البريد</a>.</p>',
  magicLinkLoginSubject: 'رابط تسجيل الدخول',
  magicLinkLoginBody: '<p><a href="{{ verification_url }}">تسجيل الدخول</a>. يعمل الرابط مرة واحدة.</p>',
  updateEmailSubject: 'تأكيد عنوان بريدك الجديد',
  updateEmailBody: '<p>أكّد هذا العنوان: <a href="{{ verification_url }}">تأكيد</a>.</p>',
  forgotPasswordSubject: 'إعادة تعيين كلمة المرور',
  forgotPasswordBody: '<p><a href="{{ verification_url }}">إعادة تعيين كلمة المرور</a>. تجاهل هذه الرسالة إن لم تطلب ذلك.</p>',
  verifyOtpSubject: 'رمزك لمرة واحدة',
  verifyOtpBody: '<p>رمزك هو <strong>{{ otp }}</strong>. تنتهي صلاحيته قريبًا.</p>',
  inviteMemberSubject: 'لديك دعوة',
  inviteMemberBody: '<p>دُعيت إلى {{ organization.name }}.</p><p><a href="{{ verification_url }}">قبول الدعوة</a>.</p>',
};

/** The catalogues by BCP 47 tag, English (the default) first. */
export const EMAIL_MESSAGES: Readonly<Record<string, EmailMessages>> = Object.freeze({ en, de, fr, es, ja, ar });

const camel = (event: MailEvent): string => event.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
/** The words of an event's built-in mail in a language (English when the language has no catalogue). */
export function emailWords(event: MailEvent, language: string): { subject: string; greeting: string; body: string } {
  const m = EMAIL_MESSAGES[language] ?? en;
  const subject = m[`${camel(event)}Subject` as EmailMessageKey];
  const body = m[`${camel(event)}Body` as EmailMessageKey];
  return { subject, greeting: event === 'invite_member' ? '' : m.greeting, body };
}

/** The languages of the built-in templates, English first. */
export const EMAIL_LANGUAGES: readonly string[] = Object.keys(EMAIL_MESSAGES);

/**
 * The language of a mail from the request's `Accept-Language` (RFC 9110
 * §12.5.4: the highest-weighted tag whose primary subtag has templates;
 * English otherwise).
 */
export function mailLanguage(acceptLanguage: string | undefined): string {
  if (acceptLanguage === undefined || acceptLanguage.length > 512) return 'en';
  const tags = acceptLanguage
    .split(',')
    .map((part, i) => {
      const [tag = '', ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      return { lang: tag.trim().toLowerCase().split('-')[0] ?? '', q: q === undefined ? 1 : Number(q), i };
    })
    .filter((x) => x.q > 0 && EMAIL_LANGUAGES.includes(x.lang))
    .sort((a, b) => b.q - a.q || a.i - b.i);
  return tags[0]?.lang ?? 'en';
}

/**
 * The language of a mail or text to a user: their saved preference (the
 * profile's `locale`) when there are templates in it, else the request's
 * (see {@link mailLanguage}).
 */
export function userMailLanguage(locale: string | null | undefined, acceptLanguage: string | undefined): string {
  const saved = typeof locale === 'string' ? (locale.toLowerCase().split('-')[0] ?? '') : '';
  return EMAIL_LANGUAGES.includes(saved) ? saved : mailLanguage(acceptLanguage);
}
