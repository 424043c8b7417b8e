/**
 * The client-facing `message` of the errors a sign-in or sign-up form shows,
 * in the caller's language (`Accept-Language`, gRPC metadata). Only the
 * message changes: `code`, `reason` and `details` stay as they are, so that
 * programs keep deciding on them; English is the reference and the answer
 * whenever the language, or the reason, has no translation here.
 *
 * Scope (docs/errors.md, "Languages"): user-facing operations only (never
 * the super-admin ones), and the reasons listed below, keyed by reason:
 * wrong credentials, a taken address, sign-up off, revoked access, the
 * password checks, codes and MFA sessions, expired or invalid links, and
 * lockouts. Other messages (validation of a field, say) stay English.
 */
import { LatchkeyError } from '../engine/errors.ts';
import { mailLanguage } from '../admin/index.ts';

type Catalogue = Readonly<Record<string, string>>;

const de: Catalogue = {
  invalid_credentials: 'Ungültige Anmeldedaten',
  user_already_exists: 'Für diese Adresse oder Telefonnummer gibt es bereits ein Konto',
  signup_disabled: 'Die Registrierung ist auf diesem Server ausgeschaltet',
  access_revoked: 'Der Zugang dieses Kontos wurde gesperrt',
  password_mismatch: 'Das Passwort und seine Bestätigung stimmen nicht überein',
  invalid_otp: 'Ungültiger Code',
  expired_token: 'Der Code oder Link ist abgelaufen',
  invalid_token: 'Ungültiger oder abgelaufener Link',
  invalid_mfa_session: 'Die Anmeldung ist abgelaufen; melden Sie sich erneut an',
  too_many_attempts: 'Zu viele Versuche; versuchen Sie es später erneut',
  email_not_verified: 'Bestätigen Sie zuerst Ihre E-Mail-Adresse',
};
const fr: Catalogue = {
  invalid_credentials: 'Identifiants incorrects',
  user_already_exists: 'Un compte existe déjà pour cette adresse ou ce numéro',
  signup_disabled: 'L’inscription est désactivée sur ce serveur',
  access_revoked: 'L’accès de ce compte a été révoqué',
  password_mismatch: 'Le mot de passe et sa confirmation diffèrent',
  invalid_otp: 'Code incorrect',
  expired_token: 'Le code ou le lien a expiré',
  invalid_token: 'Lien invalide ou expiré',
  invalid_mfa_session: 'La connexion a expiré ; reconnectez-vous',
  too_many_attempts: 'Trop de tentatives ; réessayez plus tard',
  email_not_verified: 'Confirmez d’abord votre adresse e-mail',
};
const es: Catalogue = {
  invalid_credentials: 'Credenciales incorrectas',
  user_already_exists: 'Ya existe una cuenta con esta dirección o número',
  signup_disabled: 'El registro está desactivado en este servidor',
  access_revoked: 'Se ha revocado el acceso de esta cuenta',
  password_mismatch: 'La contraseña y su confirmación no coinciden',
  invalid_otp: 'Código incorrecto',
  expired_token: 'El código o el enlace ha caducado',
  invalid_token: 'Enlace no válido o caducado',
  invalid_mfa_session: 'El inicio de sesión ha caducado; vuelve a iniciar sesión',
  too_many_attempts: 'Demasiados intentos; inténtalo más tarde',
  email_not_verified: 'Confirma primero tu dirección de correo',
};
const ja: Catalogue = {
  invalid_credentials: '認証情報が正しくありません',
  user_already_exists: 'このアドレスまたは電話番号のアカウントはすでに存在します',
  signup_disabled: 'このサーバーでは新規登録が無効です',
  access_revoked: 'このアカウントのアクセスは取り消されています',
  password_mismatch: 'パスワードと確認用パスワードが一致しません',
  invalid_otp: 'コードが正しくありません',
  expired_token: 'コードまたはリンクの有効期限が切れています',
  invalid_token: 'リンクが無効か、有効期限が切れています',
  invalid_mfa_session: 'サインインの有効期限が切れました。もう一度サインインしてください',
  too_many_attempts: '試行回数が多すぎます。しばらくしてからお試しください',
  email_not_verified: '先にメールアドレスを確認してください',
};
const ar: Catalogue = {
  invalid_credentials: 'بيانات الدخول غير صحيحة',
  user_already_exists: 'يوجد حساب بهذا العنوان أو الرقم بالفعل',
  signup_disabled: 'التسجيل معطّل على هذا الخادم',
  access_revoked: 'أُلغي وصول هذا الحساب',
  password_mismatch: 'كلمة المرور وتأكيدها غير متطابقين',
  invalid_otp: 'الرمز غير صحيح',
  expired_token: 'انتهت صلاحية الرمز أو الرابط',
  invalid_token: 'الرابط غير صالح أو منتهي الصلاحية',
  invalid_mfa_session: 'انتهت صلاحية تسجيل الدخول؛ سجّل الدخول مرة أخرى',
  too_many_attempts: 'محاولات كثيرة جدًا؛ حاول لاحقًا',
  email_not_verified: 'أكّد عنوان بريدك الإلكتروني أولًا',
};

/** The translated messages by language and reason (English: the errors' own). */
export const ERROR_MESSAGES: Readonly<Record<string, Catalogue>> = Object.freeze({ de, fr, es, ja, ar });

/** `err` with its message in the language `acceptLanguage` prefers, when translated; else `err` itself. */
export function localizeError(err: LatchkeyError, acceptLanguage: string | undefined): LatchkeyError {
  if (acceptLanguage === undefined || err.reason === undefined) return err;
  const message = ERROR_MESSAGES[mailLanguage(acceptLanguage)]?.[err.reason];
  if (message === undefined) return err;
  return new LatchkeyError(err.code, message, { reason: err.reason, ...(err.details === undefined ? {} : { details: err.details }), cause: err });
}
