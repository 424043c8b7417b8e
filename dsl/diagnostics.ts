/**
 * Positioned diagnostics of the DSL.
 *
 * Position convention (the same as OpenFGA's language tooling and the
 * conformance `expected_errors.json` files): `line` numbers are 0-based,
 * `column` numbers are 0-based UTF-16 offsets within the line, `column.end`
 * is exclusive (`end - start` is the length of the marked text), and a
 * diagnostic that has no better place is reported at line 0, column 0..0.
 * Only `\n` starts a new line. Syntax errors are placed as OpenFGA's parser
 * places them: the start column counts code points and the end adds the
 * token's UTF-16 length (the same after characters of the Basic Multilingual
 * Plane).
 */

/** One problem found in a DSL text. */
export type DslDiagnostic = {
  /**
   * `syntax` for lexer and parser errors; otherwise OpenFGA's validation
   * error type (`invalid-type`, `missing-definition`, `relation-no-entry-point`,
   * `condition-not-used`, ...) or `module` for errors found while combining
   * module files.
   */
  kind: string;
  message: string;
  line: { start: number; end: number };
  column: { start: number; end: number };
  /** The module file the diagnostic belongs to (modular models only). */
  file?: string;
};

/** A position range inside one source text (0-based line and column, exclusive end column). */
export type SourceSpan = {
  line: number;
  column: number;
  length: number;
};

/** Builds a diagnostic from a kind, a message and an optional span. */
export function diagnostic(kind: string, message: string, span: SourceSpan | undefined, file?: string): DslDiagnostic {
  const d: DslDiagnostic = span
    ? {
        kind,
        message,
        line: { start: span.line, end: span.line },
        column: { start: span.column, end: span.column + span.length },
      }
    : { kind, message, line: { start: 0, end: 0 }, column: { start: 0, end: 0 } };
  if (file !== undefined) d.file = file;
  return d;
}

/** Joins two spans on the same line into one covering both (falls back to `a`). */
export function joinSpans(a: SourceSpan, b: SourceSpan): SourceSpan {
  if (a.line !== b.line) return a;
  return { line: a.line, column: a.column, length: b.column + b.length - a.column };
}
