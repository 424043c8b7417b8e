/**
 * OpenFGA's parser grammar (openfga/language `OpenFGAParser.g4`) as data,
 * for recovery.ts, which walks it the way OpenFGA's ANTLR-generated parser
 * does to report syntax errors as OpenFGA reports them. Every rule and
 * subrule is kept as written there, since the error messages depend on the
 * grammar's exact shape (which tokens a rule may start with, which may follow
 * it, where a decision is taken).
 *
 * A block of single-token alternatives (`identifier`, the body of
 * `conditionExpression`) is one token set, as ANTLR compiles it.
 */
import { MAX_TYPE, TT } from './recovery_lexer.ts';

/** Match one token of a set. */
export type Tok = { k: 'tok'; id: number; set: ReadonlySet<number> };
/** Invoke a rule. */
export type Call = { k: 'call'; id: number; rule: string };
/** A decision: alternatives (`alt`), `( … )?` (`opt`), `( … )*` (`star`) or `( … )+` (`plus`). */
export type Block = { k: 'block'; id: number; kind: 'alt' | 'opt' | 'star' | 'plus'; alts: El[][] };
export type El = Tok | Call | Block;

let nextId = 1;
const tok = (...types: number[]): Tok => ({ k: 'tok', id: nextId++, set: new Set(types) });
const notTok = (...types: number[]): Tok => {
  const set = new Set<number>();
  for (let t = 1; t <= MAX_TYPE; t++) if (!types.includes(t)) set.add(t);
  return { k: 'tok', id: nextId++, set };
};
const r = (rule: string): Call => ({ k: 'call', id: nextId++, rule });
const block = (kind: Block['kind'], alts: El[][]): Block => ({ k: 'block', id: nextId++, kind, alts });
const opt = (...seq: El[]): Block => block('opt', [seq]);
const star = (...seq: El[]): Block => block('star', [seq]);
const plus = (...seq: El[]): Block => block('plus', [seq]);
const alt = (...alts: El[][]): Block => block('alt', alts);

const { WHITESPACE: WS, NEWLINE: NL } = TT;
const groupingOrRecurse = (): Block => alt([r('relationDefGrouping')], [r('relationRecurseNoDirect')]);

export const RULES: Record<string, El[]> = {
  main: [opt(tok(WS)), opt(tok(NL)), alt([r('modelHeader')], [r('moduleHeader')]), opt(tok(NL)), r('typeDefs'), opt(tok(NL)), r('conditions'), opt(tok(NL)), tok(TT.EOF)],
  modelHeader: [opt(r('multiLineComment'), tok(NL)), tok(TT.MODEL), tok(NL), tok(TT.SCHEMA), tok(WS), tok(TT.SCHEMA_VERSION), opt(tok(WS))],
  moduleHeader: [opt(r('multiLineComment'), tok(NL)), tok(TT.MODULE), tok(WS), r('identifier'), opt(tok(WS))],
  typeDefs: [star(r('typeDef'))],
  typeDef: [
    opt(tok(NL), r('multiLineComment')),
    tok(NL),
    opt(tok(TT.EXTEND), tok(WS)),
    tok(TT.TYPE),
    tok(WS),
    r('extended_identifier'),
    opt(tok(NL), tok(TT.RELATIONS), plus(r('relationDeclaration'))),
  ],
  relationDeclaration: [opt(tok(NL), r('multiLineComment')), tok(NL), tok(TT.DEFINE), tok(WS), r('relationName'), opt(tok(WS)), tok(TT.COLON), opt(tok(WS)), r('relationDef')],
  relationName: [r('extended_identifier')],
  relationDef: [alt([r('relationDefDirectAssignment')], [r('relationDefGrouping')], [r('relationRecurse')]), opt(r('relationDefPartials'))],
  relationDefNoDirect: [alt([r('relationDefGrouping')], [r('relationRecurseNoDirect')]), opt(r('relationDefPartials'))],
  relationDefPartials: [
    alt(
      [plus(tok(WS), tok(TT.OR), tok(WS), groupingOrRecurse())],
      [plus(tok(WS), tok(TT.AND), tok(WS), groupingOrRecurse())],
      [tok(WS), tok(TT.BUT_NOT), tok(WS), groupingOrRecurse()],
    ),
  ],
  relationDefGrouping: [r('relationDefRewrite')],
  relationRecurse: [tok(TT.LPAREN), star(tok(WS)), alt([r('relationDef')], [r('relationRecurseNoDirect')]), star(tok(WS)), tok(TT.RPAREN)],
  relationRecurseNoDirect: [tok(TT.LPAREN), star(tok(WS)), alt([r('relationDefNoDirect')], [r('relationRecurseNoDirect')]), star(tok(WS)), tok(TT.RPAREN)],
  relationDefDirectAssignment: [
    tok(TT.LBRACKET),
    opt(tok(WS)),
    r('relationDefTypeRestriction'),
    opt(tok(WS)),
    star(tok(TT.COMMA), opt(tok(WS)), r('relationDefTypeRestriction'), opt(tok(WS))),
    tok(TT.RPRACKET),
  ],
  relationDefRewrite: [r('extended_identifier'), opt(tok(WS), tok(TT.FROM), tok(WS), r('extended_identifier'))],
  relationDefTypeRestriction: [
    opt(tok(NL)),
    alt([r('relationDefTypeRestrictionBase')], [r('relationDefTypeRestrictionBase'), tok(WS), tok(TT.KEYWORD_WITH), tok(WS), r('conditionName')]),
    opt(tok(NL)),
  ],
  relationDefTypeRestrictionBase: [r('extended_identifier'), block('opt', [[tok(TT.COLON), tok(TT.STAR)], [tok(TT.HASH), r('extended_identifier')]])],
  conditions: [star(r('condition'))],
  condition: [
    opt(tok(NL), r('multiLineComment')),
    tok(NL),
    tok(TT.CONDITION),
    tok(WS),
    r('conditionName'),
    opt(tok(WS)),
    tok(TT.LPAREN),
    opt(tok(WS)),
    r('conditionParameter'),
    opt(tok(WS)),
    star(tok(TT.COMMA), opt(tok(WS)), r('conditionParameter'), opt(tok(WS))),
    opt(tok(NL)),
    tok(TT.RPAREN),
    opt(tok(WS)),
    tok(TT.LBRACE),
    opt(tok(NL)),
    opt(tok(WS)),
    r('conditionExpression'),
    opt(tok(NL)),
    tok(TT.RBRACE),
  ],
  conditionName: [tok(TT.IDENTIFIER)],
  conditionParameter: [opt(tok(NL)), r('parameterName'), opt(tok(WS)), tok(TT.COLON), opt(tok(WS)), r('parameterType')],
  parameterName: [tok(TT.IDENTIFIER)],
  parameterType: [alt([tok(TT.CONDITION_PARAM_TYPE)], [tok(TT.CONDITION_PARAM_CONTAINER), tok(TT.LESS), tok(TT.CONDITION_PARAM_TYPE), tok(TT.GREATER)])],
  multiLineComment: [tok(TT.HASH), star(notTok(NL)), opt(tok(NL), r('multiLineComment'))],
  identifier: [tok(TT.MODEL, TT.SCHEMA, TT.TYPE, TT.RELATION, TT.IDENTIFIER, TT.MODULE, TT.EXTEND)],
  extended_identifier: [alt([r('identifier')], [tok(TT.EXTENDED_IDENTIFIER)])],
  conditionExpression: [star(notTok(TT.RBRACE))],
};
