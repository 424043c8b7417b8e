/**
 * Records the device of a request that opened or refreshed a session (its
 * user agent and client IP, first and last time) for the account center's
 * list of sessions (`list_sessions`). Called by every place that sets the
 * session cookies of a result: the operations' handlers and the social
 * login's callback.
 */
import type { AuthResult, AuthService } from '../auth/index.ts';
import type { Logger } from './logger.ts';

/** The request a session was opened or refreshed by. */
export interface SessionDeviceRequest {
  readonly clientIp: string;
  readonly userAgent: string;
}

/**
 * Writes the device of `request` for the session `result` opened or
 * refreshed (nothing when it opened none). Never throws: the sign-in has
 * already succeeded, and a store that fails here is logged, not turned into
 * a failed login (the listing then shows the session without its device).
 */
export async function recordSessionDevice(auth: AuthService | undefined, result: AuthResult, request: SessionDeviceRequest, logger: Logger): Promise<void> {
  const sid = result.session?.sid;
  if (auth === undefined || sid === undefined) return;
  try {
    await auth.sessions.recordDevice(sid, { user_agent: request.userAgent, ip: request.clientIp });
  } catch (err) {
    logger.warn('session device not recorded', { err });
  }
}
