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

class DslParser extends CstParser {
  constructor(validate: boolean) {
    super(T.allTokens, { maxLookahead: 3, recoveryEnabled: false, skipValidations: !validate });
    this.performSelfAnalysis();
  }

  // Chevrotain computes an OPTION's or MANY's lookahead from inside the rule
  // only, so where the decision depends on what follows the rule (a line
  // break starts the next declaration or closes the block), a two-token gate
  // decides. The gates are created once, not per call.
  #nlThen(a: TokenType, b?: TokenType): () => boolean {
    return () => {
      if (this.LA(1).tokenType !== T.Newline) return false;
      const n = this.LA(2).tokenType;
      return n === a || n === b;
    };
  }

  #atTypeDef = this.#nlThen(T.Type, T.Extend);
  #atDoubleNewline = this.#nlThen(T.Newline);
  #atCondition = this.#nlThen(T.Condition);
  #atRelations = this.#nlThen(T.Relations);

  main = this.RULE('main', () => {
    this.OPTION(() => this.CONSUME(T.Whitespace));
    this.OPTION1(() => this.CONSUME(T.Newline));
    this.OR([
      { ALT: () => this.SUBRULE(this.modelHeader) },
      { ALT: () => this.SUBRULE(this.moduleHeader) },
    ]);
    // OpenFGA's `main` allows one extra line break after the header, one after
    // the types and one before the end. Two line-break tokens only meet when a
    // line holding just a `//` comment (a hidden token) sits between them.
    this.OPTION2({ GATE: this.#atDoubleNewline, DEF: () => this.CONSUME1(T.Newline) });
    this.MANY({ GATE: this.#atTypeDef, DEF: () => this.SUBRULE(this.typeDef) });
    this.OPTION3({ GATE: this.#atDoubleNewline, DEF: () => this.CONSUME2(T.Newline) });
    this.MANY1({ GATE: this.#atCondition, DEF: () => this.SUBRULE(this.condition) });
    this.OPTION4(() => this.CONSUME3(T.Newline));
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
    this.CONSUME(T.Ident);
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
    this.CONSUME(T.Name);
    this.OPTION1({
      GATE: this.#atRelations,
      DEF: () => {
        this.CONSUME1(T.Newline);
        this.CONSUME(T.Relations);
        this.AT_LEAST_ONE(() => this.SUBRULE(this.relationDeclaration));
      },
    });
  });

  relationDeclaration = this.RULE('relationDeclaration', () => {
    // NEWLINE DEFINE WHITESPACE, lexed as one token (tokens.ts).
    this.CONSUME(T.DefineLine);
    this.CONSUME(T.Name);
    this.OPTION(() => this.CONSUME(T.Whitespace));
    // COLON WHITESPACE?
    this.OR([{ ALT: () => this.CONSUME(T.Colon) }, { ALT: () => this.CONSUME(T.ColonWs) }]);
    this.SUBRULE(this.relationDef);
  });

  /** A definition whose first operand may be a direct restriction. */
  relationDef = this.RULE('relationDef', () => {
    this.OR([
      { ALT: () => this.SUBRULE(this.directAssignment) },
      { ALT: () => this.SUBRULE(this.groupFirst) },
      { ALT: () => this.SUBRULE(this.rewrite) },
    ]);
    this.OPTION(() => this.SUBRULE(this.partials));
  });

  /** A definition with no direct restriction anywhere. */
  relationDefNoDirect = this.RULE('relationDefNoDirect', () => {
    this.SUBRULE(this.operand);
    this.OPTION(() => this.SUBRULE(this.partials));
  });

  /** The operator tail: all `or`, all `and`, or one `but not`. */
  partials = this.RULE('partials', () => {
    this.OR([
      {
        ALT: () =>
          this.AT_LEAST_ONE(() => {
            this.CONSUME(T.OrOp);
            this.SUBRULE(this.operand);
          }),
      },
      {
        ALT: () =>
          this.AT_LEAST_ONE1(() => {
            this.CONSUME(T.AndOp);
            this.SUBRULE1(this.operand);
          }),
      },
      {
        ALT: () => {
          this.CONSUME(T.ButNotOp);
          this.SUBRULE2(this.operand);
        },
      },
    ]);
  });

  operand = this.RULE('operand', () => {
    this.OR([{ ALT: () => this.SUBRULE(this.groupNoDirect) }, { ALT: () => this.SUBRULE(this.rewrite) }]);
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
    this.CONSUME(T.Name);
    this.OPTION(() => {
      this.CONSUME(T.FromOp);
      this.CONSUME1(T.Name);
    });
  });

  directAssignment = this.RULE('directAssignment', () => {
    this.CONSUME(T.LBracket);
    this.OPTION(() => this.CONSUME(T.Whitespace));
    this.SUBRULE(this.typeRestriction);
    this.OPTION1(() => this.CONSUME1(T.Whitespace));
    this.MANY(() => {
      // COMMA WHITESPACE?
      this.OR([{ ALT: () => this.CONSUME(T.Comma) }, { ALT: () => this.CONSUME(T.CommaWs) }]);
      this.SUBRULE1(this.typeRestriction);
      this.OPTION3(() => this.CONSUME3(T.Whitespace));
    });
    this.CONSUME(T.RBracket);
  });

  typeRestriction = this.RULE('typeRestriction', () => {
    this.OPTION(() => this.CONSUME(T.Newline));
    this.CONSUME(T.Name);
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
            this.CONSUME1(T.Name);
          },
        },
      ]),
    );
    this.OPTION2(() => {
      this.CONSUME(T.WithOp);
      this.CONSUME(T.Identifier);
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
}

/** The parser, built once and reused (chevrotain parsers are reusable). */
export const dslParser = new DslParser(false);

/** Builds a parser with chevrotain's grammar validations on (used by tests to check the grammar). */
export function grammarProblems(): string[] {
  try {
    new DslParser(true);
    return [];
  } catch (e) {
    return [String(e)];
  }
}

/** Parses a token vector into a CST; syntax errors are left in `dslParser.errors`. */
export function parseTokens(tokens: IToken[]): CstNode {
  dslParser.input = tokens;
  return dslParser.main();
}
