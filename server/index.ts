/**
 * The service layer's public surface, with no protocol in it: the request
 * context and the typed services, the authenticator chain, the pipeline every
 * transport calls, the handlers' record, the composition root, flags, logger,
 * metrics, client IPs and rate limits, and the session cookies. Transports and
 * the process entry come in through here.
 */
export * from './context.ts';
export { UNAUTHORIZED_MESSAGE, adminSecretAuthenticator, hasCredentials, resolvePrincipal, unauthenticated } from './authenticate.ts';
export { createPipeline, type CallInfo, type Pipeline } from './pipeline.ts';
export { ENGLISH_ERROR_MESSAGES, localizeError, translatedMessage } from './error_messages.ts';
export * from './flags.ts';
export { flagsMarkdown, helpText } from './flag_docs.ts';
export * from './logger.ts';
export * from './metrics.ts';
export * from './client_ip.ts';
export { ipBytes, parseCidr } from './cidr.ts';
export * from './rate_limit.ts';
export { VERSION } from './version.ts';
export * from './session_cookies.ts';
export * from './session_device.ts';
export { createServices, closeServices, type ServicesOptions } from './compose/services.ts';
export { describeDatabase, openMainDatabase, closeMainDatabase, pingMainDatabase, openDatabase, pingDatabase } from './compose/database.ts';
export { HANDLERS, handlerOf, defineServedOperation, type AnyHandler, type Handler, type Handlers, type HandlersOf, type ServedOperation } from './handlers/index.ts';
export { metaFromConfig, DEPRECATED_MESSAGES } from './handlers/meta.ts';
export { adminEventRecorder } from './handlers/admin.ts';
