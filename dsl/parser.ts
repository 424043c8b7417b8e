/**
 * Grammar of the OpenFGA modeling language as a chevrotain CST parser.
 * Grammar only: building the model is the visitor's job (visitor.ts).
 *
 * The rules follow OpenFGA's `OpenFGAParser.g4` (openfga/language). Notable
 * consequences of that grammar, kept here on purpose:
 * - each nesting level uses one operator kind (`a or b and c` is an error);
 * - a direct type restriction `[...]` may only be the first operand of the
 *   definition, possibly inside a leading parenthesised group
 *   (`([user] or a) and b` is valid, `a or [user]` is not);
 * - `from` does not chain and `but not` takes exactly one operand;
 * - a condition's body is every token up to the first `}`.
 *
 * OpenFGA's grammar allows a `#` comment block before headers and
 * declarations; the comment pre-pass (`stripComments`) blanks every line
 * that starts with `#`, so that alternative never matches and is left out.
 */
import { CstParser, EOF, type CstNode, type IToken, type TokenType } from 'chevrotain';
import * as T from './tokens.ts';

const NAME_TOKENS: TokenType[] = [T.Identifier, T.Model, T.Schema, T.Type, T.Relation, T.Module, T.Extend];
const NAME_OR_EXTENDED: TokenType[] = [...NAME_TOKENS, T.ExtendedIdentifier];

class DslParser extends CstParser {
  constructor() {
    super(T.allTokens, { maxLookahead: 3, recoveryEnabled: false, skipValidations: true });
    this.performSelfAnalysis();
  }

  #isWsThen(types: TokenType[]): boolean {
    return this.LA(1).tokenType === T.Whitespace && types.includes(this.LA(2).tokenType);
  }

  #isNewlineThen(types: TokenType[]): boolean {
    return this.LA(1).tokenType === T.Newline && types.includes(this.LA(2).tokenType);
  }

  #atName(): boolean {
    return NAME_OR_EXTENDED.includes(this.LA(1).tokenType);
  }

  main = this.RULE('main', () => {
    this.OPTION(() => this.CONSUME(T.Whitespace));
    this.OPTION1(() => this.CONSUME(T.Newline));
    this.OR([
      { ALT: () => this.SUBRULE(this.modelHeader) },
      { ALT: () => this.SUBRULE(this.moduleHeader) },
    ]);
    this.MANY({
      GATE: () => this.#isNewlineThen([T.Type, T.Extend]),
      DEF: () => this.SUBRULE(this.typeDef),
    });
    this.MANY1({
      GATE: () => this.#isNewlineThen([T.Condition]),
      DEF: () => this.SUBRULE(this.condition),
    });
    this.OPTION2(() => this.CONSUME1(T.Newline));
    this.CONSUME(EOF);
  });

  modelHeader = this.RULE('modelHeader', () => {
    this.CONSUME(T.Model);
    this.CONSUME(T.Newline);
    this.CONSUME(T.Schema);
    this.CONSUME(T.Whitespace);
    this.CONSUME(T.SchemaVersion);
    this.OPTION(() => this.CONSUME1(T.Whitespace));
  });

  moduleHeader = this.RULE('moduleHeader', () => {
    this.CONSUME(T.Module);
    this.CONSUME(T.Whitespace);
    this.SUBRULE(this.identifier);
    this.OPTION(() => this.CONSUME1(T.Whitespace));
  });

  typeDef = this.RULE('typeDef', () => {
    this.CONSUME(T.Newline);
    this.OPTION(() => {
      this.CONSUME(T.Extend);
      this.CONSUME(T.Whitespace);
    });
    this.CONSUME(T.Type);
    this.CONSUME1(T.Whitespace);
    this.SUBRULE(this.name);
    this.OPTION1({
      GATE: () => this.#isNewlineThen([T.Relations]),
      DEF: () => {
        this.CONSUME1(T.Newline);
        this.CONSUME(T.Relations);
        this.AT_LEAST_ONE({
          GATE: () => this.#isNewlineThen([T.Define]),
          DEF: () => this.SUBRULE(this.relationDeclaration),
        });
      },
    });
  });

  relationDeclaration = this.RULE('relationDeclaration', () => {
    this.CONSUME(T.Newline);
    this.CONSUME(T.Define);
    this.CONSUME(T.Whitespace);
    this.SUBRULE(this.name);
    this.OPTION(() => this.CONSUME1(T.Whitespace));
    this.CONSUME(T.Colon);
    this.OPTION1(() => this.CONSUME2(T.Whitespace));
    this.SUBRULE(this.relationDef);
  });

  /** A definition whose first operand may be a direct restriction. */
  relationDef = this.RULE('relationDef', () => {
    this.OR([
      { ALT: () => this.SUBRULE(this.directAssignment) },
      { ALT: () => this.SUBRULE(this.groupFirst) },
      { GATE: () => this.#atName(), ALT: () => this.SUBRULE(this.rewrite) },
    ]);
    this.OPTION({
      GATE: () => this.#isWsThen([T.Or, T.And, T.ButNot]),
      DEF: () => this.SUBRULE(this.partials),
    });
  });

  /** A definition with no direct restriction anywhere. */
  relationDefNoDirect = this.RULE('relationDefNoDirect', () => {
    this.SUBRULE(this.operand);
    this.OPTION({
      GATE: () => this.#isWsThen([T.Or, T.And, T.ButNot]),
      DEF: () => this.SUBRULE(this.partials),
    });
  });

  /** The operator tail: all `or`, all `and`, or one `but not`. */
  partials = this.RULE('partials', () => {
    this.OR([
      {
        GATE: () => this.#isWsThen([T.Or]),
        ALT: () =>
          this.AT_LEAST_ONE({
            GATE: () => this.#isWsThen([T.Or]),
            DEF: () => {
              this.CONSUME(T.Whitespace);
              this.CONSUME(T.Or);
              this.CONSUME1(T.Whitespace);
              this.SUBRULE(this.operand);
            },
          }),
      },
      {
        GATE: () => this.#isWsThen([T.And]),
        ALT: () =>
          this.AT_LEAST_ONE1({
            GATE: () => this.#isWsThen([T.And]),
            DEF: () => {
              this.CONSUME2(T.Whitespace);
              this.CONSUME(T.And);
              this.CONSUME3(T.Whitespace);
              this.SUBRULE1(this.operand);
            },
          }),
      },
      {
        ALT: () => {
          this.CONSUME4(T.Whitespace);
          this.CONSUME(T.ButNot);
          this.CONSUME5(T.Whitespace);
          this.SUBRULE2(this.operand);
        },
      },
    ]);
  });

  operand = this.RULE('operand', () => {
    this.OR([
      { ALT: () => this.SUBRULE(this.groupNoDirect) },
      { GATE: () => this.#atName(), ALT: () => this.SUBRULE(this.rewrite) },
    ]);
  });

  groupFirst = this.RULE('groupFirst', () => {
    this.CONSUME(T.LParen);
    this.MANY(() => this.CONSUME(T.Whitespace));
    this.SUBRULE(this.relationDef);
    this.MANY1(() => this.CONSUME1(T.Whitespace));
    this.CONSUME(T.RParen);
  });

  groupNoDirect = this.RULE('groupNoDirect', () => {
    this.CONSUME(T.LParen);
    this.MANY(() => this.CONSUME(T.Whitespace));
    this.SUBRULE(this.relationDefNoDirect);
    this.MANY1(() => this.CONSUME1(T.Whitespace));
    this.CONSUME(T.RParen);
  });

  /** `name` or `name from tupleset`. */
  rewrite = this.RULE('rewrite', () => {
    this.SUBRULE(this.name);
    this.OPTION({
      GATE: () => this.#isWsThen([T.From]),
      DEF: () => {
        this.CONSUME(T.Whitespace);
        this.CONSUME(T.From);
        this.CONSUME1(T.Whitespace);
        this.SUBRULE1(this.name);
      },
    });
  });

  directAssignment = this.RULE('directAssignment', () => {
    this.CONSUME(T.LBracket);
    this.OPTION(() => this.CONSUME(T.Whitespace));
    this.SUBRULE(this.typeRestriction);
    this.OPTION1(() => this.CONSUME1(T.Whitespace));
    this.MANY(() => {
      this.CONSUME(T.Comma);
      this.OPTION2(() => this.CONSUME2(T.Whitespace));
      this.SUBRULE1(this.typeRestriction);
      this.OPTION3(() => this.CONSUME3(T.Whitespace));
    });
    this.CONSUME(T.RBracket);
  });

  typeRestriction = this.RULE('typeRestriction', () => {
    this.OPTION(() => this.CONSUME(T.Newline));
    this.SUBRULE(this.name);
    this.OPTION1(() =>
      this.OR([
        {
          ALT: () => {
            this.CONSUME(T.Colon);
            this.CONSUME(T.Star);
          },
        },
        {
          ALT: () => {
            this.CONSUME(T.Hash);
            this.SUBRULE1(this.name);
          },
        },
      ]),
    );
    this.OPTION2({
      GATE: () => this.#isWsThen([T.With]),
      DEF: () => {
        this.CONSUME(T.Whitespace);
        this.CONSUME(T.With);
        this.CONSUME1(T.Whitespace);
        this.CONSUME(T.Identifier);
      },
    });
    this.OPTION3(() => this.CONSUME1(T.Newline));
  });

  condition = this.RULE('condition', () => {
    this.CONSUME(T.Newline);
    this.CONSUME(T.Condition);
    this.CONSUME(T.Whitespace);
    this.CONSUME(T.Identifier);
    this.OPTION(() => this.CONSUME1(T.Whitespace));
    this.CONSUME(T.LParen);
    this.OPTION1(() => this.CONSUME2(T.Whitespace));
    this.SUBRULE(this.conditionParameter);
    this.OPTION2(() => this.CONSUME3(T.Whitespace));
    this.MANY(() => {
      this.CONSUME(T.Comma);
      this.OPTION3(() => this.CONSUME4(T.Whitespace));
      this.SUBRULE1(this.conditionParameter);
      this.OPTION4(() => this.CONSUME5(T.Whitespace));
    });
    this.CONSUME(T.ConditionParamsEnd);
    this.OPTION5(() => this.CONSUME6(T.Whitespace));
    this.CONSUME(T.LBrace);
    this.MANY1(() => this.CONSUME(T.ExprToken));
    this.CONSUME(T.RBrace);
  });

  conditionParameter = this.RULE('conditionParameter', () => {
    this.CONSUME(T.Identifier);
    this.OPTION(() => this.CONSUME(T.Whitespace));
    this.CONSUME(T.Colon);
    this.OPTION1(() => this.CONSUME1(T.Whitespace));
    this.OR([
      { ALT: () => this.CONSUME(T.ConditionParamType) },
      {
        ALT: () => {
          this.CONSUME(T.ConditionParamContainer);
          this.CONSUME(T.Less);
          this.CONSUME1(T.ConditionParamType);
          this.CONSUME(T.Greater);
        },
      },
    ]);
  });

  identifier = this.RULE('identifier', () => {
    this.OR(NAME_TOKENS.map((t) => ({ ALT: () => this.CONSUME(t) })));
  });

  /** OpenFGA's `extended_identifier`: a name, possibly with `.`, `/` or `-` groups. */
  name = this.RULE('name', () => {
    this.OR(NAME_OR_EXTENDED.map((t) => ({ ALT: () => this.CONSUME(t) })));
  });
}

/** The parser, built once and reused (chevrotain parsers are reusable). */
export const dslParser = new DslParser();

/** Parses a token vector into a CST; syntax errors are left in `dslParser.errors`. */
export function parseTokens(tokens: IToken[]): CstNode {
  dslParser.input = tokens;
  return dslParser.main();
}
