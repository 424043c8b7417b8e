/**
 * The words of the built-in email templates in the languages other than
 * English (English is `DEFAULT_EMAIL_TEMPLATES` in email_templates.ts, and
 * the reference: every language has each event). Bodies are template text:
 * `{{ … }}` placeholders are filled, HTML-escaped, at render time.
 */
/** The events of `EMAIL_TEMPLATE_EVENTS` (email_templates.ts checks that the two agree). */
type MailEvent = 'basic_auth_signup' | 'magic_link_login' | 'update_email' | 'forgot_password' | 'verify_otp' | 'invite_member';
type Words = Readonly<Record<MailEvent, { subject: string; body: string }>>;

const de: Words = {
  basic_auth_signup: { subject: 'Bestätigen Sie Ihre E-Mail-Adresse', body: '<p>Hallo {{ user.given_name }},</p><p>Bestätigen Sie Ihre E-Mail-Adresse: <a href="{{ verification_url }}">E-Mail bestätigen</a>.</p>' },
  magic_link_login: { subject: 'Ihr Anmeldelink', body: '<p>Hallo {{ user.given_name }},</p><p><a href="{{ verification_url }}">Anmelden</a>. Der Link gilt einmal.</p>' },
  update_email: { subject: 'Bestätigen Sie Ihre neue E-Mail-Adresse', body: '<p>Hallo {{ user.given_name }},</p><p>Bestätigen Sie diese Adresse: <a href="{{ verification_url }}">bestätigen</a>.</p>' },
  forgot_password: { subject: 'Setzen Sie Ihr Passwort zurück', body: '<p>Hallo {{ user.given_name }},</p><p><a href="{{ verification_url }}">Passwort zurücksetzen</a>. Ignorieren Sie diese E-Mail, wenn Sie das nicht angefordert haben.</p>' },
  verify_otp: { subject: 'Ihr Einmalcode', body: '<p>Hallo {{ user.given_name }},</p><p>Ihr Code lautet <strong>{{ otp }}</strong>. Er läuft in Kürze ab.</p>' },
  invite_member: { subject: 'Sie sind eingeladen', body: '<p>Sie wurden zu {{ organization.name }} eingeladen.</p><p><a href="{{ verification_url }}">Einladung annehmen</a>.</p>' },
};
const fr: Words = {
  basic_auth_signup: { subject: 'Confirmez votre adresse e-mail', body: '<p>Bonjour {{ user.given_name }},</p><p>Confirmez votre adresse e-mail : <a href="{{ verification_url }}">confirmer l’adresse</a>.</p>' },
  magic_link_login: { subject: 'Votre lien de connexion', body: '<p>Bonjour {{ user.given_name }},</p><p><a href="{{ verification_url }}">Se connecter</a>. Le lien ne sert qu’une fois.</p>' },
  update_email: { subject: 'Confirmez votre nouvelle adresse e-mail', body: '<p>Bonjour {{ user.given_name }},</p><p>Confirmez cette adresse : <a href="{{ verification_url }}">confirmer</a>.</p>' },
  forgot_password: { subject: 'Réinitialisez votre mot de passe', body: '<p>Bonjour {{ user.given_name }},</p><p><a href="{{ verification_url }}">Réinitialiser le mot de passe</a>. Ignorez ce message si vous n’en êtes pas à l’origine.</p>' },
  verify_otp: { subject: 'Votre code à usage unique', body: '<p>Bonjour {{ user.given_name }},</p><p>Votre code est <strong>{{ otp }}</strong>. Il expire bientôt.</p>' },
  invite_member: { subject: 'Vous êtes invité', body: '<p>Vous êtes invité à rejoindre {{ organization.name }}.</p><p><a href="{{ verification_url }}">Accepter l’invitation</a>.</p>' },
};
const es: Words = {
  basic_auth_signup: { subject: 'Verifica tu dirección de correo', body: '<p>Hola, {{ user.given_name }}:</p><p>Confirma tu dirección de correo: <a href="{{ verification_url }}">verificar correo</a>.</p>' },
  magic_link_login: { subject: 'Tu enlace de inicio de sesión', body: '<p>Hola, {{ user.given_name }}:</p><p><a href="{{ verification_url }}">Iniciar sesión</a>. El enlace sirve una vez.</p>' },
  update_email: { subject: 'Confirma tu nueva dirección de correo', body: '<p>Hola, {{ user.given_name }}:</p><p>Confirma esta dirección: <a href="{{ verification_url }}">confirmar</a>.</p>' },
  forgot_password: { subject: 'Restablece tu contraseña', body: '<p>Hola, {{ user.given_name }}:</p><p><a href="{{ verification_url }}">Restablecer la contraseña</a>. Ignora este correo si no lo pediste.</p>' },
  verify_otp: { subject: 'Tu código de un solo uso', body: '<p>Hola, {{ user.given_name }}:</p><p>Tu código es <strong>{{ otp }}</strong>. Caduca en breve.</p>' },
  invite_member: { subject: 'Tienes una invitación', body: '<p>Te han invitado a {{ organization.name }}.</p><p><a href="{{ verification_url }}">Aceptar la invitación</a>.</p>' },
};
const ja: Words = {
  basic_auth_signup: { subject: 'メールアドレスの確認', body: '<p>{{ user.given_name }} さん</p><p>メールアドレスを確認してください: <a href="{{ verification_url }}">メールを確認</a>。</p>' },
  magic_link_login: { subject: 'サインイン用リンク', body: '<p>{{ user.given_name }} さん</p><p><a href="{{ verification_url }}">サインイン</a>。このリンクは 1 回だけ使えます。</p>' },
  update_email: { subject: '新しいメールアドレスの確認', body: '<p>{{ user.given_name }} さん</p><p>このアドレスを確認してください: <a href="{{ verification_url }}">確認</a>。</p>' },
  forgot_password: { subject: 'パスワードの再設定', body: '<p>{{ user.given_name }} さん</p><p><a href="{{ verification_url }}">パスワードを再設定</a>。心当たりがない場合は、このメールを無視してください。</p>' },
  verify_otp: { subject: 'ワンタイムコード', body: '<p>{{ user.given_name }} さん</p><p>コードは <strong>{{ otp }}</strong> です。まもなく期限切れになります。</p>' },
  invite_member: { subject: '招待が届いています', body: '<p>{{ organization.name }} に招待されました。</p><p><a href="{{ verification_url }}">招待を受ける</a>。</p>' },
};
const ar: Words = {
  basic_auth_signup: { subject: 'تأكيد عنوان بريدك الإلكتروني', body: '<p>مرحبًا {{ user.given_name }}،</p><p>أكّد عنوان بريدك الإلكتروني: <a href="{{ verification_url }}">تأكيد البريد</a>.</p>' },
  magic_link_login: { subject: 'رابط تسجيل الدخول', body: '<p>مرحبًا {{ user.given_name }}،</p><p><a href="{{ verification_url }}">تسجيل الدخول</a>. يعمل الرابط مرة واحدة.</p>' },
  update_email: { subject: 'تأكيد عنوان بريدك الجديد', body: '<p>مرحبًا {{ user.given_name }}،</p><p>أكّد هذا العنوان: <a href="{{ verification_url }}">تأكيد</a>.</p>' },
  forgot_password: { subject: 'إعادة تعيين كلمة المرور', body: '<p>مرحبًا {{ user.given_name }}،</p><p><a href="{{ verification_url }}">إعادة تعيين كلمة المرور</a>. تجاهل هذه الرسالة إن لم تطلب ذلك.</p>' },
  verify_otp: { subject: 'رمزك لمرة واحدة', body: '<p>مرحبًا {{ user.given_name }}،</p><p>رمزك هو <strong>{{ otp }}</strong>. تنتهي صلاحيته قريبًا.</p>' },
  invite_member: { subject: 'لديك دعوة', body: '<p>دُعيت إلى {{ organization.name }}.</p><p><a href="{{ verification_url }}">قبول الدعوة</a>.</p>' },
};

/** The built-in templates' words by language (English aside). */
export const EMAIL_WORDS: Readonly<Record<string, Words>> = Object.freeze({ de, fr, es, ja, ar });

/** The languages of the built-in templates, English first. */
export const EMAIL_LANGUAGES: readonly string[] = ['en', ...Object.keys(EMAIL_WORDS)];

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
