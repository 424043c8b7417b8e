/**
 * The message catalogues of the consent page (`/app/consent`), per
 * language, English the reference: every catalogue has exactly its keys.
 * `scope_<name>` says in plain words what a client may do with a scope;
 * `{client}` is filled in by the page.
 */
export const CONSENT_MESSAGE_KEYS = [
  'title', 'heading', 'intro', 'scope_openid', 'scope_email', 'scope_profile', 'scope_phone', 'scope_offline_access',
  'allow', 'deny', 'later', 'gone', 'goneTitle',
] as const;

export type ConsentMessages = Readonly<Record<(typeof CONSENT_MESSAGE_KEYS)[number], string>>;

const en: ConsentMessages = {
  title: 'Allow access', heading: '{client} wants to use your account', intro: 'If you allow it, {client} can:',
  scope_openid: 'Know who you are when you sign in', scope_email: 'See your email address', scope_profile: 'See your name, nickname and picture',
  scope_phone: 'See your phone number', scope_offline_access: 'Keep this access while you are not using it',
  allow: 'Allow', deny: 'Deny', later: 'You can withdraw this at any time under "Connected apps" in your account.',
  gone: 'This request has expired or belongs to another session. Go back to the application and try again.', goneTitle: 'Request expired',
};
const de: ConsentMessages = {
  title: 'Zugriff erlauben', heading: '{client} möchte Ihr Konto verwenden', intro: 'Wenn Sie zustimmen, kann {client}:',
  scope_openid: 'bei der Anmeldung erkennen, wer Sie sind', scope_email: 'Ihre E-Mail-Adresse sehen', scope_profile: 'Ihren Namen, Spitznamen und Ihr Bild sehen',
  scope_phone: 'Ihre Telefonnummer sehen', scope_offline_access: 'diesen Zugriff behalten, während Sie die Anwendung nicht nutzen',
  allow: 'Erlauben', deny: 'Ablehnen', later: 'Sie können dies jederzeit unter „Verbundene Apps“ in Ihrem Konto widerrufen.',
  gone: 'Diese Anfrage ist abgelaufen oder gehört zu einer anderen Sitzung. Kehren Sie zur Anwendung zurück und versuchen Sie es erneut.', goneTitle: 'Anfrage abgelaufen',
};
const fr: ConsentMessages = {
  title: "Autoriser l'accès", heading: '{client} souhaite utiliser votre compte', intro: 'Si vous acceptez, {client} pourra :',
  scope_openid: 'savoir qui vous êtes lors de la connexion', scope_email: 'voir votre adresse e-mail', scope_profile: 'voir votre nom, votre pseudonyme et votre photo',
  scope_phone: 'voir votre numéro de téléphone', scope_offline_access: "garder cet accès lorsque vous n'utilisez pas l'application",
  allow: 'Autoriser', deny: 'Refuser', later: 'Vous pouvez retirer cet accès à tout moment dans « Applications connectées » de votre compte.',
  gone: "Cette demande a expiré ou appartient à une autre session. Revenez à l'application et réessayez.", goneTitle: 'Demande expirée',
};
const es: ConsentMessages = {
  title: 'Permitir el acceso', heading: '{client} quiere usar tu cuenta', intro: 'Si lo permites, {client} podrá:',
  scope_openid: 'saber quién eres al iniciar sesión', scope_email: 'ver tu dirección de correo electrónico', scope_profile: 'ver tu nombre, apodo e imagen',
  scope_phone: 'ver tu número de teléfono', scope_offline_access: 'conservar este acceso mientras no uses la aplicación',
  allow: 'Permitir', deny: 'Denegar', later: 'Puedes retirarlo en cualquier momento en «Aplicaciones conectadas» de tu cuenta.',
  gone: 'Esta solicitud ha caducado o pertenece a otra sesión. Vuelve a la aplicación e inténtalo de nuevo.', goneTitle: 'Solicitud caducada',
};
const ja: ConsentMessages = {
  title: 'アクセスの許可', heading: '{client} があなたのアカウントの利用を求めています', intro: '許可すると、{client} は次のことができます:',
  scope_openid: 'サインイン時にあなたが誰かを確認する', scope_email: 'メールアドレスを見る', scope_profile: '名前、ニックネーム、プロフィール画像を見る',
  scope_phone: '電話番号を見る', scope_offline_access: 'アプリを使っていない間もこのアクセスを保つ',
  allow: '許可', deny: '拒否', later: 'アカウントの「連携アプリ」からいつでも取り消せます。',
  gone: 'このリクエストは期限切れか、別のセッションのものです。アプリに戻ってもう一度お試しください。', goneTitle: 'リクエストの期限切れ',
};
const ar: ConsentMessages = {
  title: 'السماح بالوصول', heading: 'يريد {client} استخدام حسابك', intro: 'إذا سمحت بذلك، يستطيع {client}:',
  scope_openid: 'معرفة هويتك عند تسجيل الدخول', scope_email: 'رؤية عنوان بريدك الإلكتروني', scope_profile: 'رؤية اسمك ولقبك وصورتك',
  scope_phone: 'رؤية رقم هاتفك', scope_offline_access: 'الاحتفاظ بهذا الوصول حين لا تستخدم التطبيق',
  allow: 'السماح', deny: 'الرفض', later: 'يمكنك سحب ذلك في أي وقت من «التطبيقات المتصلة» في حسابك.',
  gone: 'انتهت صلاحية هذا الطلب أو أنه يخص جلسة أخرى. ارجع إلى التطبيق وحاول مرة أخرى.', goneTitle: 'انتهت صلاحية الطلب',
};

export const CONSENT_MESSAGES: Readonly<Record<string, ConsentMessages>> = Object.freeze({ en, de, fr, es, ja, ar });
