/**
 * `POST /graphql` behind the HTTP adapter's guards: the schema built from the
 * operations table, the validation rules (the spec's, the limits, and no
 * introspection unless enabled), a cache of parsed and validated documents,
 * and graphql-http's handler. `http/app.ts` loads this module on the first
 * request to /graphql, so that graphql-js and the schema are held only by a
 * server that is asked through GraphQL (docs/performance.md, "Server
 * footprint").
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { createHandler } from 'graphql-http/lib/use/express';
import { GraphQLError, NoSchemaIntrospectionCustomRule, parse, specifiedRules, validate, type DocumentNode, type ValidationRule } from 'graphql';
import { CookieSink, type CallInfo, type Config, type Logger, type Pipeline } from '../../server/index.ts';
import type { AnyOperation } from '../../api/index.ts';
import { buildSchema, type GraphqlContext } from './schema.ts';
import { limitsRule } from './limits.ts';

const MAX_CACHED_QUERY = 16 * 1024;
const MAX_QUERY_TOKENS = 10_000;
const MAX_CACHED_DOCUMENTS = 500;

export type GraphqlHandler = (req: Request, res: Response, next: NextFunction) => unknown;

export interface GraphqlHandlerOptions {
  operations: readonly AnyOperation[];
  pipeline: Pipeline;
  config: Pick<Config, 'enableGraphqlIntrospection' | 'graphqlMaxAliases' | 'graphqlMaxComplexity' | 'graphqlMaxDepth'>;
  logger: Logger;
  /** What the pipeline learns of the request (the adapter's own CallInfo). */
  callInfo: (req: IncomingMessage, res: Response, cookies: CookieSink) => CallInfo;
  /** Writes the cookies an operation set onto the response. */
  flush: (res: ServerResponse, cookies: CookieSink) => void;
}

export function createGraphqlHandler(o: GraphqlHandlerOptions): GraphqlHandler {
  const { config, pipeline } = o;
  const schema = buildSchema(o.operations, pipeline);
  const rules: ValidationRule[] = [
    ...specifiedRules,
    limitsRule({ maxDepth: config.graphqlMaxDepth, maxComplexity: config.graphqlMaxComplexity, maxAliases: config.graphqlMaxAliases }),
  ];
  if (!config.enableGraphqlIntrospection) rules.push(NoSchemaIntrospectionCustomRule);
  // Parsed and validated documents by query text: clients send the same few
  // queries over and over, and parse + validate cost more than executing `meta`.
  const documents = new Map<string, DocumentNode>();
  return createHandler<GraphqlContext>({
    schema,
    onSubscribe: (_req, params) => {
      const query = params.query;
      let document = documents.get(query);
      if (!document) {
        try {
          // A token cap bounds the parse cost of a hostile document before any limit rule runs.
          document = parse(query, { maxTokens: MAX_QUERY_TOKENS });
        } catch (err) {
          return [err instanceof GraphQLError ? err : new GraphQLError('malformed query')];
        }
        const errors = validate(schema, document, rules);
        if (errors.length > 0) return errors;
        if (query.length <= MAX_CACHED_QUERY) {
          if (documents.size >= MAX_CACHED_DOCUMENTS) documents.clear();
          documents.set(query, document);
        }
      }
      return {
        schema,
        document,
        variableValues: params.variables ?? null,
        operationName: params.operationName ?? null,
      } as unknown as ReturnType<NonNullable<Parameters<typeof createHandler<GraphqlContext>>[0]['onSubscribe']>>;
    },
    // Parse, validation and variable-coercion errors are the client's: `invalid_argument`.
    formatError: (err) => {
      if (err instanceof GraphQLError) {
        if (err.extensions.code !== undefined) return err;
        return new GraphQLError(err.message, { nodes: err.nodes ?? null, extensions: { ...err.extensions, code: 'invalid_argument', reason: 'invalid_graphql' } });
      }
      o.logger.error('unexpected graphql error', { err });
      return new GraphQLError('internal server error', { extensions: { code: 'internal' } });
    },
    context: (req) => {
      const res = req.context.res;
      const cookies = new CookieSink();
      const info = o.callInfo(req.raw, res, cookies);
      return { info, flushCookies: () => o.flush(res, cookies) } satisfies GraphqlContext;
    },
  });
}
