/**
 * SMS sending through the vendor's HTTP API (Twilio's Messages resource:
 * `POST {base}/2010-04-01/Accounts/{account_sid}/Messages.json`, HTTP basic
 * auth with an API key and secret, form fields `To`, `From`, `Body`).
 * The base URL is an option so that tests point it at a local server acting
 * as the vendor.
 *
 * Each message carries an `Idempotency-Key` header, the id of its outbox row
 * (the same on every attempt), so a vendor or relay that honours it, or a
 * receiver that counts by it, drops the second copy of a message sent again
 * after its sender died mid-send.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { Mailer } from './mailer.ts';

/**
 * Sends one text message; throws `unavailable` (reason `sms_not_sent`) when
 * the vendor refuses or cannot be reached. `key` is the message's idempotency
 * key (sent as `Idempotency-Key`), the same on every attempt of one message.
 */
export type SmsSender = (to: string, body: string, key?: string) => Promise<void>;

export interface SmsOptions {
  /** Vendor API base URL. Default `https://api.twilio.com`. */
  baseUrl?: string | undefined;
  /** `--sms-account-sid`. */
  accountSid: string;
  /** `--sms-api-key`. */
  apiKey: string;
  /** `--sms-api-secret`. */
  apiSecret: string;
  /** `--sms-sender`: the From number. */
  sender: string;
  /** Per-request time limit, milliseconds. Default 10 000. */
  timeoutMs?: number;
}

/** An {@link SmsSender} over the vendor's HTTP API. */
export function createSmsSender(o: SmsOptions): SmsSender {
  const base = (o.baseUrl || 'https://api.twilio.com').replace(/\/+$/, '');
  const url = `${base}/2010-04-01/Accounts/${encodeURIComponent(o.accountSid)}/Messages.json`;
  const authorization = `Basic ${Buffer.from(`${o.apiKey}:${o.apiSecret}`, 'utf8').toString('base64')}`;
  return async (to, body, key) => {
    let status: number;
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/x-www-form-urlencoded', ...(key ? { 'idempotency-key': key } : {}) },
        body: new URLSearchParams({ To: to, From: o.sender, Body: body }).toString(),
        signal: AbortSignal.timeout(o.timeoutMs ?? 10_000),
      });
      status = res.status;
      await res.arrayBuffer();
    } catch (err) {
      throw new LatchkeyError('unavailable', 'the text message could not be sent', { reason: 'sms_not_sent', cause: err });
    }
    if (status < 200 || status >= 300) {
      throw new LatchkeyError('unavailable', 'the text message could not be sent', { reason: 'sms_not_sent', cause: { status } });
    }
  };
}

/**
 * The SMS sender as the outbox queue's sender: a queued text message is a
 * message whose recipient is the phone number and whose `text` is the body;
 * its outbox id is the idempotency key.
 */
export function smsOutboxSender(send: SmsSender): Mailer {
  return {
    send: (message) => send(message.to, message.text ?? '', message.id),
    close: () => undefined,
  };
}
