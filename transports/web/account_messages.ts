/**
 * The message catalogues of the account center (`/app/account`), per
 * language, English the reference: every other catalogue has exactly its
 * keys (a test holds them equal and fails on a message left in English).
 * `{…}` slots are filled in by the page. Messages the server answers are
 * shown as the server words them.
 */
export const ACCOUNT_MESSAGE_KEYS = [
  'title', 'signOut', 'noscript', 'sections', 'profile', 'security', 'sessions', 'methods', 'deleteAccount',
  'givenName', 'familyName', 'nickname', 'picture', 'saveProfile', 'emailAndPhone', 'email', 'phone', 'currentPassword',
  'saveContact', 'password', 'newPassword', 'confirmNewPassword', 'changePassword', 'secondFactor', 'askSecondFactor',
  'saveSecondFactor', 'noSecondFactor', 'sessionsTitle', 'endOthers', 'connectHelp', 'deleteWarning', 'deleteConfirm',
  'unreachable', 'sessionOver', 'requestFailed', 'profileSaved', 'changeFirst', 'saved', 'passwordsDiffer', 'passwordChanged',
  'mfaOn', 'mfaOff', 'thisDevice', 'seen', 'endSession', 'endSessionOf', 'sessionEnded', 'oneOtherEnded', 'othersEnded',
  'unlink', 'unlinkOf', 'connect', 'tickToConfirm', 'factorApp', 'factorEmail', 'factorSms', 'askedFor', 'or',
] as const;

export type AccountMessageKey = (typeof ACCOUNT_MESSAGE_KEYS)[number];
export type AccountMessages = Readonly<Record<AccountMessageKey, string>>;

const en: AccountMessages = {
  title: 'Your account', signOut: 'Sign out', noscript: 'This page needs JavaScript.', sections: 'Account sections',
  profile: 'Profile', security: 'Sign-in and security', sessions: 'Sessions', methods: 'Sign-in methods', deleteAccount: 'Delete account',
  givenName: 'Given name', familyName: 'Family name', nickname: 'Nickname', picture: 'Picture (https URL)', saveProfile: 'Save profile',
  emailAndPhone: 'Email and phone', email: 'Email', phone: 'Phone number', currentPassword: 'Current password',
  saveContact: 'Save email and phone', password: 'Password', newPassword: 'New password', confirmNewPassword: 'Confirm the new password',
  changePassword: 'Change password', secondFactor: 'Second factor', askSecondFactor: 'Ask for a second factor when I sign in',
  saveSecondFactor: 'Save second factor', noSecondFactor: 'This server does not offer a second factor.', sessionsTitle: 'Sessions and devices',
  endOthers: 'End all other sessions', connectHelp: 'Connect a provider account that has the same verified email address as this account.',
  deleteWarning: 'Deleting the account signs you out everywhere. It cannot be undone from here.', deleteConfirm: 'I want to delete my account',
  unreachable: 'The server could not be reached. Try again.', sessionOver: 'Your session has ended. Sign in again.', requestFailed: 'Request failed ({status})',
  profileSaved: 'Profile saved.', changeFirst: 'Change the email or the phone number first.', saved: 'Saved.',
  passwordsDiffer: 'The two new passwords differ.', passwordChanged: 'Password changed. Your other sessions were ended.',
  mfaOn: 'A second factor will be asked at your next sign-in.', mfaOff: 'The second factor is off.', thisDevice: 'This device',
  seen: 'signed in {first} · last seen {last}', endSession: 'End session', endSessionOf: 'End session ({name})', sessionEnded: 'Session ended.',
  oneOtherEnded: '1 other session ended.', othersEnded: '{count} other sessions ended.', unlink: 'Unlink', unlinkOf: 'Unlink {name}',
  connect: 'Connect {name}', tickToConfirm: 'Tick the box to confirm.', factorApp: 'an authenticator app', factorEmail: 'a code by email',
  factorSms: 'a code by SMS', askedFor: 'At sign-in you will be asked for {factors}.', or: ' or ',
};

const de: AccountMessages = {
  title: 'Ihr Konto', signOut: 'Abmelden', noscript: 'Diese Seite benötigt JavaScript.', sections: 'Kontobereiche',
  profile: 'Profil', security: 'Anmeldung und Sicherheit', sessions: 'Sitzungen', methods: 'Anmeldemethoden', deleteAccount: 'Konto löschen',
  givenName: 'Vorname', familyName: 'Nachname', nickname: 'Spitzname', picture: 'Bild (https-URL)', saveProfile: 'Profil speichern',
  emailAndPhone: 'E-Mail und Telefon', email: 'E-Mail', phone: 'Telefonnummer', currentPassword: 'Aktuelles Passwort',
  saveContact: 'E-Mail und Telefon speichern', password: 'Passwort', newPassword: 'Neues Passwort', confirmNewPassword: 'Neues Passwort bestätigen',
  changePassword: 'Passwort ändern', secondFactor: 'Zweiter Faktor', askSecondFactor: 'Bei der Anmeldung einen zweiten Faktor verlangen',
  saveSecondFactor: 'Zweiten Faktor speichern', noSecondFactor: 'Dieser Server bietet keinen zweiten Faktor an.', sessionsTitle: 'Sitzungen und Geräte',
  endOthers: 'Alle anderen Sitzungen beenden', connectHelp: 'Verbinden Sie ein Anbieterkonto mit derselben bestätigten E-Mail-Adresse wie dieses Konto.',
  deleteWarning: 'Wenn Sie das Konto löschen, werden Sie überall abgemeldet. Das lässt sich hier nicht rückgängig machen.', deleteConfirm: 'Ich möchte mein Konto löschen',
  unreachable: 'Der Server ist nicht erreichbar. Bitte versuchen Sie es erneut.', sessionOver: 'Ihre Sitzung ist beendet. Melden Sie sich erneut an.', requestFailed: 'Anfrage fehlgeschlagen ({status})',
  profileSaved: 'Profil gespeichert.', changeFirst: 'Ändern Sie zuerst die E-Mail-Adresse oder die Telefonnummer.', saved: 'Gespeichert.',
  passwordsDiffer: 'Die beiden neuen Passwörter stimmen nicht überein.', passwordChanged: 'Passwort geändert. Ihre anderen Sitzungen wurden beendet.',
  mfaOn: 'Bei Ihrer nächsten Anmeldung wird ein zweiter Faktor verlangt.', mfaOff: 'Der zweite Faktor ist ausgeschaltet.', thisDevice: 'Dieses Gerät',
  seen: 'angemeldet {first} · zuletzt gesehen {last}', endSession: 'Sitzung beenden', endSessionOf: 'Sitzung beenden ({name})', sessionEnded: 'Sitzung beendet.',
  oneOtherEnded: '1 andere Sitzung beendet.', othersEnded: '{count} andere Sitzungen beendet.', unlink: 'Trennen', unlinkOf: 'Trennen: {name}',
  connect: 'Mit {name} verbinden', tickToConfirm: 'Setzen Sie zur Bestätigung das Häkchen.', factorApp: 'eine Authenticator-App', factorEmail: 'einen Code per E-Mail',
  factorSms: 'einen Code per SMS', askedFor: 'Bei der Anmeldung werden Sie nach {factors} gefragt.', or: ' oder ',
};

const fr: AccountMessages = {
  title: 'Votre compte', signOut: 'Se déconnecter', noscript: 'Cette page nécessite JavaScript.', sections: 'Sections du compte',
  profile: 'Profil', security: 'Connexion et sécurité', sessions: 'Sessions', methods: 'Moyens de connexion', deleteAccount: 'Supprimer le compte',
  givenName: 'Prénom', familyName: 'Nom de famille', nickname: 'Surnom', picture: 'Photo (URL https)', saveProfile: 'Enregistrer le profil',
  emailAndPhone: 'E-mail et téléphone', email: 'E-mail', phone: 'Numéro de téléphone', currentPassword: 'Mot de passe actuel',
  saveContact: 'Enregistrer l’e-mail et le téléphone', password: 'Mot de passe', newPassword: 'Nouveau mot de passe', confirmNewPassword: 'Confirmer le nouveau mot de passe',
  changePassword: 'Changer le mot de passe', secondFactor: 'Second facteur', askSecondFactor: 'Demander un second facteur à la connexion',
  saveSecondFactor: 'Enregistrer le second facteur', noSecondFactor: 'Ce serveur ne propose pas de second facteur.', sessionsTitle: 'Sessions et appareils',
  endOthers: 'Fermer toutes les autres sessions', connectHelp: 'Associez un compte de fournisseur qui a la même adresse e-mail vérifiée que ce compte.',
  deleteWarning: 'Supprimer le compte vous déconnecte partout. Cette action est irréversible depuis cette page.', deleteConfirm: 'Je veux supprimer mon compte',
  unreachable: 'Le serveur est injoignable. Réessayez.', sessionOver: 'Votre session a pris fin. Reconnectez-vous.', requestFailed: 'La requête a échoué ({status})',
  profileSaved: 'Profil enregistré.', changeFirst: 'Modifiez d’abord l’e-mail ou le numéro de téléphone.', saved: 'Enregistré.',
  passwordsDiffer: 'Les deux nouveaux mots de passe diffèrent.', passwordChanged: 'Mot de passe modifié. Vos autres sessions ont été fermées.',
  mfaOn: 'Un second facteur vous sera demandé à votre prochaine connexion.', mfaOff: 'Le second facteur est désactivé.', thisDevice: 'Cet appareil',
  seen: 'connecté le {first} · vu le {last}', endSession: 'Fermer la session', endSessionOf: 'Fermer la session ({name})', sessionEnded: 'Session fermée.',
  oneOtherEnded: '1 autre session fermée.', othersEnded: '{count} autres sessions fermées.', unlink: 'Dissocier', unlinkOf: 'Dissocier {name}',
  connect: 'Associer {name}', tickToConfirm: 'Cochez la case pour confirmer.', factorApp: 'une application d’authentification', factorEmail: 'un code par e-mail',
  factorSms: 'un code par SMS', askedFor: 'À la connexion, il vous sera demandé {factors}.', or: ' ou ',
};

const es: AccountMessages = {
  title: 'Tu cuenta', signOut: 'Cerrar sesión', noscript: 'Esta página necesita JavaScript.', sections: 'Secciones de la cuenta',
  profile: 'Perfil', security: 'Acceso y seguridad', sessions: 'Sesiones', methods: 'Métodos de acceso', deleteAccount: 'Eliminar la cuenta',
  givenName: 'Nombre', familyName: 'Apellidos', nickname: 'Apodo', picture: 'Foto (URL https)', saveProfile: 'Guardar perfil',
  emailAndPhone: 'Correo y teléfono', email: 'Correo electrónico', phone: 'Número de teléfono', currentPassword: 'Contraseña actual',
  saveContact: 'Guardar correo y teléfono', password: 'Contraseña', newPassword: 'Nueva contraseña', confirmNewPassword: 'Confirma la nueva contraseña',
  changePassword: 'Cambiar contraseña', secondFactor: 'Segundo factor', askSecondFactor: 'Pedir un segundo factor al iniciar sesión',
  saveSecondFactor: 'Guardar segundo factor', noSecondFactor: 'Este servidor no ofrece un segundo factor.', sessionsTitle: 'Sesiones y dispositivos',
  endOthers: 'Cerrar todas las demás sesiones', connectHelp: 'Conecta una cuenta de proveedor con la misma dirección de correo verificada que esta cuenta.',
  deleteWarning: 'Eliminar la cuenta cierra tu sesión en todas partes. No se puede deshacer desde aquí.', deleteConfirm: 'Quiero eliminar mi cuenta',
  unreachable: 'No se pudo conectar con el servidor. Inténtalo de nuevo.', sessionOver: 'Tu sesión ha terminado. Vuelve a iniciar sesión.', requestFailed: 'La solicitud falló ({status})',
  profileSaved: 'Perfil guardado.', changeFirst: 'Primero cambia el correo o el número de teléfono.', saved: 'Guardado.',
  passwordsDiffer: 'Las dos contraseñas nuevas no coinciden.', passwordChanged: 'Contraseña cambiada. Tus otras sesiones se han cerrado.',
  mfaOn: 'Se te pedirá un segundo factor en tu próximo inicio de sesión.', mfaOff: 'El segundo factor está desactivado.', thisDevice: 'Este dispositivo',
  seen: 'inicio {first} · última actividad {last}', endSession: 'Cerrar sesión remota', endSessionOf: 'Cerrar sesión remota ({name})', sessionEnded: 'Sesión cerrada.',
  oneOtherEnded: 'Se cerró 1 sesión más.', othersEnded: 'Se cerraron {count} sesiones más.', unlink: 'Desvincular', unlinkOf: 'Desvincular {name}',
  connect: 'Conectar {name}', tickToConfirm: 'Marca la casilla para confirmar.', factorApp: 'una aplicación de autenticación', factorEmail: 'un código por correo',
  factorSms: 'un código por SMS', askedFor: 'Al iniciar sesión se te pedirá {factors}.', or: ' o ',
};

const ja: AccountMessages = {
  title: 'アカウント', signOut: 'サインアウト', noscript: 'このページには JavaScript が必要です。', sections: 'アカウントのセクション',
  profile: 'プロフィール', security: 'サインインとセキュリティ', sessions: 'セッション', methods: 'サインイン方法', deleteAccount: 'アカウントを削除',
  givenName: '名', familyName: '姓', nickname: 'ニックネーム', picture: '写真（https の URL）', saveProfile: 'プロフィールを保存',
  emailAndPhone: 'メールアドレスと電話番号', email: 'メールアドレス', phone: '電話番号', currentPassword: '現在のパスワード',
  saveContact: 'メールアドレスと電話番号を保存', password: 'パスワード', newPassword: '新しいパスワード', confirmNewPassword: '新しいパスワードの確認',
  changePassword: 'パスワードを変更', secondFactor: '2 段階目の認証', askSecondFactor: 'サインイン時に 2 段階目の認証を求める',
  saveSecondFactor: '2 段階認証の設定を保存', noSecondFactor: 'このサーバーは 2 段階目の認証を提供していません。', sessionsTitle: 'セッションとデバイス',
  endOthers: '他のすべてのセッションを終了', connectHelp: 'このアカウントと同じ確認済みメールアドレスを持つプロバイダーのアカウントを連携してください。',
  deleteWarning: 'アカウントを削除すると、すべての場所でサインアウトされます。ここから元に戻すことはできません。', deleteConfirm: 'アカウントを削除します',
  unreachable: 'サーバーに接続できませんでした。もう一度お試しください。', sessionOver: 'セッションが終了しました。もう一度サインインしてください。', requestFailed: 'リクエストに失敗しました（{status}）',
  profileSaved: 'プロフィールを保存しました。', changeFirst: '先にメールアドレスか電話番号を変更してください。', saved: '保存しました。',
  passwordsDiffer: '2 つの新しいパスワードが一致しません。', passwordChanged: 'パスワードを変更しました。他のセッションは終了しました。',
  mfaOn: '次回のサインインで 2 段階目の認証が求められます。', mfaOff: '2 段階目の認証はオフです。', thisDevice: 'このデバイス',
  seen: '{first} にサインイン · 最終アクセス {last}', endSession: 'セッションを終了', endSessionOf: 'セッションを終了（{name}）', sessionEnded: 'セッションを終了しました。',
  oneOtherEnded: '他のセッションを 1 件終了しました。', othersEnded: '他のセッションを {count} 件終了しました。', unlink: '連携を解除', unlinkOf: '{name} の連携を解除',
  connect: '{name} と連携', tickToConfirm: '確認のためにチェックを入れてください。', factorApp: '認証アプリ', factorEmail: 'メールで届くコード',
  factorSms: 'SMS で届くコード', askedFor: 'サインイン時に{factors}が求められます。', or: 'または',
};

const ar: AccountMessages = {
  title: 'حسابك', signOut: 'تسجيل الخروج', noscript: 'تحتاج هذه الصفحة إلى JavaScript.', sections: 'أقسام الحساب',
  profile: 'الملف الشخصي', security: 'تسجيل الدخول والأمان', sessions: 'الجلسات', methods: 'طرق تسجيل الدخول', deleteAccount: 'حذف الحساب',
  givenName: 'الاسم الأول', familyName: 'اسم العائلة', nickname: 'الاسم المستعار', picture: 'الصورة (رابط https)', saveProfile: 'حفظ الملف الشخصي',
  emailAndPhone: 'البريد الإلكتروني والهاتف', email: 'البريد الإلكتروني', phone: 'رقم الهاتف', currentPassword: 'كلمة المرور الحالية',
  saveContact: 'حفظ البريد الإلكتروني والهاتف', password: 'كلمة المرور', newPassword: 'كلمة المرور الجديدة', confirmNewPassword: 'تأكيد كلمة المرور الجديدة',
  changePassword: 'تغيير كلمة المرور', secondFactor: 'العامل الثاني', askSecondFactor: 'اطلب عاملًا ثانيًا عند تسجيل دخولي',
  saveSecondFactor: 'حفظ إعداد العامل الثاني', noSecondFactor: 'لا يوفّر هذا الخادم عاملًا ثانيًا.', sessionsTitle: 'الجلسات والأجهزة',
  endOthers: 'إنهاء كل الجلسات الأخرى', connectHelp: 'اربط حسابًا لدى مزوّد يحمل عنوان البريد الإلكتروني الموثّق نفسه لهذا الحساب.',
  deleteWarning: 'حذف الحساب يسجّل خروجك من كل مكان، ولا يمكن التراجع عنه من هنا.', deleteConfirm: 'أريد حذف حسابي',
  unreachable: 'تعذّر الوصول إلى الخادم. حاول مرة أخرى.', sessionOver: 'انتهت جلستك. سجّل الدخول مرة أخرى.', requestFailed: 'فشل الطلب ({status})',
  profileSaved: 'تم حفظ الملف الشخصي.', changeFirst: 'غيّر البريد الإلكتروني أو رقم الهاتف أولًا.', saved: 'تم الحفظ.',
  passwordsDiffer: 'كلمتا المرور الجديدتان غير متطابقتين.', passwordChanged: 'تم تغيير كلمة المرور، وأُنهيت جلساتك الأخرى.',
  mfaOn: 'سيُطلب منك عامل ثانٍ عند تسجيل دخولك التالي.', mfaOff: 'العامل الثاني متوقف.', thisDevice: 'هذا الجهاز',
  seen: 'سجّل الدخول {first} · آخر ظهور {last}', endSession: 'إنهاء الجلسة', endSessionOf: 'إنهاء الجلسة ({name})', sessionEnded: 'تم إنهاء الجلسة.',
  oneOtherEnded: 'تم إنهاء جلسة أخرى واحدة.', othersEnded: 'تم إنهاء {count} من الجلسات الأخرى.', unlink: 'إلغاء الربط', unlinkOf: 'إلغاء ربط {name}',
  connect: 'الربط مع {name}', tickToConfirm: 'ضع علامة في المربع للتأكيد.', factorApp: 'تطبيق مصادقة', factorEmail: 'رمز عبر البريد الإلكتروني',
  factorSms: 'رمز عبر رسالة نصية', askedFor: 'عند تسجيل الدخول سيُطلب منك {factors}.', or: ' أو ',
};

/** The catalogues by BCP 47 tag, English (the default) first; the same languages as the sign-in page's. */
export const ACCOUNT_MESSAGES: Readonly<Record<string, AccountMessages>> = Object.freeze({ en, de, fr, es, ja, ar });
