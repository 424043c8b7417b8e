/**
 * The document of the account center (`/app/account`) between its head and
 * its script: `{{key}}` slots are filled from the language's catalogue
 * (transports/web/account_messages.ts) by `account_page.ts`, which also
 * holds the script that drives these elements.
 */
export const ACCOUNT_PAGE_BODY = `<header class="top">
<div class="who"><img id="avatar" alt="" width="48" height="48" hidden><div><h1 id="who-name">{{title}}</h1><p class="muted" id="account-email"></p></div></div>
<button id="sign-out" class="secondary" type="button">{{signOut}}</button>
</header>
<p id="top-msg" class="msg" role="status" aria-live="polite"></p>
<noscript>{{noscript}}</noscript>
<nav class="toc" aria-label="{{sections}}"><ul>
<li><a href="#profile-title">{{profile}}</a></li><li><a href="#security-title">{{security}}</a></li><li><a href="#sessions-title">{{sessions}}</a></li><li><a href="#methods-title">{{methods}}</a></li><li id="apps-link" hidden><a href="#apps-title">{{connectedApps}}</a></li><li id="organizations-link" hidden><a href="#organizations-title">{{organizationsTitle}}</a></li><li><a href="#delete-title">{{deleteAccount}}</a></li>
</ul></nav>
<main id="content" aria-busy="true">
<section class="card" aria-labelledby="profile-title">
<h2 id="profile-title" tabindex="-1">{{profile}}</h2>
<form id="profile-form" method="post">
<div class="grid2">
<div><label for="given">{{givenName}}</label><input id="given" name="given-name" autocomplete="given-name" maxlength="256"></div>
<div><label for="family">{{familyName}}</label><input id="family" name="family-name" autocomplete="family-name" maxlength="256"></div>
</div>
<label for="nickname">{{nickname}}</label><input id="nickname" name="nickname" autocomplete="nickname" maxlength="256">
<label for="picture">{{picture}}</label><input id="picture" name="photo" type="url" inputmode="url" autocomplete="photo" maxlength="2048">
<label for="locale">{{language}}</label><select id="locale" name="language"><option value="">{{languageBrowser}}</option>{{languageOptions}}</select>
<button class="primary" type="submit">{{saveProfile}}</button>
<p id="profile-msg" class="msg" role="status" aria-live="polite"></p>
</form>
</section>
<section class="card" aria-labelledby="security-title">
<h2 id="security-title" tabindex="-1">{{security}}</h2>
<form id="contact-form" method="post" aria-labelledby="contact-title">
<h3 id="contact-title" class="muted">{{emailAndPhone}}</h3>
<label for="email">{{email}}</label><input id="email" name="email" type="email" autocomplete="email" maxlength="320">
<label for="phone">{{phone}}</label><input id="phone" name="tel" type="tel" autocomplete="tel" maxlength="32">
<label for="contact-password">{{currentPassword}}</label><input id="contact-password" name="current-password" type="password" autocomplete="current-password" maxlength="1024">
<button class="primary" type="submit">{{saveContact}}</button>
<p id="contact-msg" class="msg" role="status" aria-live="polite"></p>
</form>
<form id="password-form" method="post" aria-labelledby="password-title">
<h3 id="password-title" class="muted">{{password}}</h3>
<label for="old-password">{{currentPassword}}</label><input id="old-password" name="current-password" type="password" autocomplete="current-password" required maxlength="1024">
<label for="new-password">{{newPassword}}</label><input id="new-password" name="new-password" type="password" autocomplete="new-password" required maxlength="1024">
<label for="confirm-password">{{confirmNewPassword}}</label><input id="confirm-password" name="confirm-password" type="password" autocomplete="new-password" required maxlength="1024">
<button class="primary" type="submit" id="change-password">{{changePassword}}</button>
<p id="password-msg" class="msg" role="status" aria-live="polite"></p>
</form>
<form id="mfa-form" method="post" aria-labelledby="mfa-title" hidden>
<h3 id="mfa-title" class="muted">{{secondFactor}}</h3>
<label class="check" for="mfa-on"><input id="mfa-on" type="checkbox">{{askSecondFactor}}</label>
<p id="mfa-help" class="muted"></p>
<button class="primary" type="submit">{{saveSecondFactor}}</button>
<p id="mfa-msg" class="msg" role="status" aria-live="polite"></p>
</form>
<p id="mfa-none" class="muted" hidden>{{noSecondFactor}}</p>
<form id="totp-form" method="post" aria-labelledby="totp-title" hidden>
<h3 id="totp-title" class="muted">{{authenticatorApp}}</h3>
<p class="muted">{{authenticatorHelp}}</p>
<div id="totp-password-field"><label for="totp-password">{{currentPassword}}</label><input id="totp-password" name="current-password" type="password" autocomplete="current-password" maxlength="1024"></div>
<div id="totp-code-field" hidden><label for="totp-code">{{authenticatorCode}}</label><input id="totp-code" name="one-time-code" inputmode="numeric" autocomplete="one-time-code" maxlength="16"></div>
<div class="actions"><button id="new-recovery-codes" class="primary" type="submit">{{newRecoveryCodes}}</button><button id="reset-totp" class="danger" type="button">{{resetApp}}</button></div>
<p id="totp-msg" class="msg" role="status" aria-live="polite"></p>
<ul id="recovery-codes" class="codes" aria-label="{{recoveryCodes}}" hidden></ul>
</form>
<div id="passkeys-box" hidden>
<h3 id="passkeys-title" class="muted">{{passkeysTitle}}</h3>
<ul id="passkeys" class="rows" aria-labelledby="passkeys-title"></ul>
<div class="actions"><button id="add-passkey" class="secondary" type="button">{{addPasskey}}</button></div>
<p id="passkeys-msg" class="msg" role="status" aria-live="polite"></p>
</div>
</section>
<section class="card" aria-labelledby="sessions-title">
<h2 id="sessions-title" tabindex="-1">{{sessionsTitle}}</h2>
<ul id="sessions" class="rows"></ul>
<div class="actions"><button id="end-others" class="secondary" type="button" hidden>{{endOthers}}</button></div>
<p id="sessions-msg" class="msg" role="status" aria-live="polite"></p>
</section>
<section class="card" aria-labelledby="methods-title">
<h2 id="methods-title" tabindex="-1">{{methods}}</h2>
<ul id="methods" class="rows"></ul>
<p id="methods-msg" class="msg" role="status" aria-live="polite"></p>
<p id="connect-help" class="muted" hidden>{{connectHelp}}</p>
<div id="connect"></div>
</section>
<section id="apps-section" class="card" aria-labelledby="apps-title" hidden>
<h2 id="apps-title" tabindex="-1">{{connectedApps}}</h2>
<ul id="apps" class="rows"></ul>
<p id="apps-msg" class="msg" role="status" aria-live="polite"></p>
</section>
<section id="organizations-section" class="card" aria-labelledby="organizations-title" hidden>
<h2 id="organizations-title" tabindex="-1">{{organizationsTitle}}</h2>
<ul id="organizations" class="rows"></ul>
<p id="organizations-msg" class="msg" role="status" aria-live="polite"></p>
</section>
<section class="card" aria-labelledby="delete-title">
<h2 id="delete-title" tabindex="-1">{{deleteAccount}}</h2>
<form id="delete-form" method="post">
<p>{{deleteWarning}}</p>
<div id="delete-password-field"><label for="delete-password">{{currentPassword}}</label><input id="delete-password" name="current-password" type="password" autocomplete="current-password" maxlength="1024"></div>
<label class="check" for="delete-confirm"><input id="delete-confirm" type="checkbox">{{deleteConfirm}}</label>
<button class="danger" type="submit" id="delete-submit">{{deleteAccount}}</button>
<p id="delete-msg" class="msg" role="status" aria-live="polite"></p>
</form>
</section>
</main>
</div>
<script type="application/json" id="messages">{{messagesJson}}</script>
`;
