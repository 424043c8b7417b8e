/**
 * How one-time codes of the MFA login reach users: by email through the
 * admin service's `verify_otp` template (or its built-in default) and the
 * persisted mail queue, and by SMS through the vendor's HTTP API
 * (`--sms-*` flags). A channel that is not configured is left out, so the
 * login never offers it.
 */
import { LatchkeyError } from '../../engine/errors.ts';
import { createSmsSender, type OtpDelivery } from '../../auth/index.ts';
import { smsCodeText, userMailLanguage } from '../../admin/index.ts';
import type { Services } from '../context.ts';
import { requestLanguage } from '../request_language.ts';

/** The delivery channels of the configured server (the admin service is looked up when a code is sent). */
export function otpDeliveryOf(services: Services): OtpDelivery {
  const c = services.config;
  const delivery: OtpDelivery = {};
  if (c.smtpHost) {
    delivery.email = async (user, code) => {
      const admin = services.admin;
      const mail = admin?.mail;
      if (admin === undefined || mail === undefined || user.email === null) {
        throw new LatchkeyError('failed_precondition', 'email sending is not configured', { reason: 'mail_disabled' });
      }
      // In the user's saved language, else the language of the call that sends it.
      const rendered = await admin.renderEmail('verify_otp', user, { otp: code }, userMailLanguage(user.locale, requestLanguage()));
      mail.enqueue({ to: user.email, subject: rendered.subject, html: rendered.html });
    };
  }
  if (c.smsAccountSid && c.smsApiKey && c.smsApiSecret && c.smsSender) {
    const send = createSmsSender({ baseUrl: c.smsApiUrl, accountSid: c.smsAccountSid, apiKey: c.smsApiKey, apiSecret: c.smsApiSecret, sender: c.smsSender });
    const org = c.organizationName ?? 'Latchkey';
    delivery.sms = (phoneNumber, code, user) => send(phoneNumber, smsCodeText(userMailLanguage(user?.locale, requestLanguage()), code, org));
  }
  return delivery;
}
