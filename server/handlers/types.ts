/**
 * The handler side of the operations table: the function that answers a row,
 * typed from the row's shapes.
 */
import type { Infer, ObjectShape, Operation, OperationName, OperationRow, Output } from '../../api/index.ts';
import type { RequestContext } from '../context.ts';

/**
 * The domain function of a row. Receives validated input; returns the
 * response object, or a promise of it (a handler with its answer at hand may
 * return it as it is: the pipeline then takes no promise hop for it). Errors
 * may be thrown or rejected alike.
 */
export type Handler<R extends Operation> = R extends { readonly stream?: true }
  ? StreamHandler<R>
  : (ctx: RequestContext, input: Infer<R['input']>) => Output<R['output']> | Promise<Output<R['output']>>;

/**
 * The domain function of a streamed row (`stream`): resolves, once the call
 * is authorised and its input accepted (errors before that are the call's
 * answer), to the messages, which it produces until `ctx.signal` aborts.
 */
export type StreamHandler<R extends Operation> = (ctx: RequestContext, input: Infer<R['input']>) => Promise<AsyncIterable<Output<R['output']>>>;

/** The handlers of a list of rows, one per row name. */
export type HandlersOf<Rows extends readonly Operation[]> = { readonly [R in Rows[number] as R['name']]: Handler<R> };

/** Every row's handler: a row without one (or a handler without a row) fails the type check. */
export type Handlers = { readonly [R in OperationRow as R['name']]: Handler<R> };

/** A handler with its row's types erased, as the pipeline calls it. */
export type AnyHandler = (ctx: RequestContext, input: unknown) => unknown;

/** The handler of `name`, erased to the common type. */
export function handlerOf(handlers: Handlers, name: OperationName | string): AnyHandler | undefined {
  return Object.hasOwn(handlers, name) ? (handlers[name as OperationName] as AnyHandler) : undefined;
}

/** A row with its handler attached: what `startServer`'s `extraOperations` serves besides the table (tests drive the plumbing with these). */
export type ServedOperation<R extends Operation = Operation> = R & { readonly handler: Handler<R> };

/** Declares a row together with its handler (for rows served besides the table). */
export function defineServedOperation<const N extends string, const I extends ObjectShape, const O extends ObjectShape>(
  op: Operation<N, I, O> & { readonly handler: Handler<Operation<N, I, O>> },
): ServedOperation {
  return Object.freeze(op) as unknown as ServedOperation;
}
