/**
 * How one-time codes of the MFA login reach users: by email through the
 * admin service's `verify_otp` template (or its built-in default) and the
 * persisted mail queue, and by SMS through the vendor's HTTP API
 * (`--sms-*` flags) and the same outbox (`./sms_queue.ts`). A channel that
 * is not configured is left out, so the login never offers it.
 */
import { LatchkeyError } from '../../engine/errors.ts';
import type { OtpDelivery } from '../../auth/index.ts';
import { smsCodeText, userMailLanguage } from '../../admin/index.ts';
import type { Services } from '../context.ts';
import { requestLanguage } from '../request_language.ts';
import { smsConfigured } from './sms_queue.ts';

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
  if (smsConfigured(services)) {
    const org = c.organizationName ?? 'Latchkey';
    // Queued and sent at once: a refused attempt is retried from the outbox (the code stays good for its minute), so the request answers as when the vendor accepted it.
    delivery.sms = async (phoneNumber, code, user) => {
      const queue = services.smsQueue;
      if (queue === undefined) throw new LatchkeyError('failed_precondition', 'phone verification needs the SMS vendor, which is not configured', { reason: 'sms_unavailable' });
      await queue.sendNow({ to: phoneNumber, subject: '', html: '', text: smsCodeText(userMailLanguage(user?.locale, requestLanguage()), code, org) });
    };
  }
  return delivery;
}
