/**
 * Error positions of OpenFGA's language test data: for every error kind its
 * semantic validation cases use, cases transcribed from openfga/language
 * `tests/data/dsl-semantic-validation-cases.yaml` (commit db371bf4,
 * Apache-2.0; case names kept) give exactly the expected errors: kind, line
 * and columns, in OpenFGA's order. Every duplicated-error case is here (the
 * language places duplicates by searching the text; see dsl/validator.ts
 * `duplicateSpan`). The syntax cases (`dsl-syntax-validation-cases.yaml`),
 * every error with its message, are in language_syntax.test.ts.
 *
 * Positions are 0-based, the end column exclusive. [case name, DSL,
 * [[kind, line, column start, column end], …]].
 */
import test from 'ava';
import { parseDsl } from '../../dsl/index.ts';

type Expected = [string, number, number, number];

const SEMANTIC: Array<[string, string, Expected[]]> = [
  ["model 1.1 diff in exclusion not valid and spaces are reflected correctly in error messages", "model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user]\n    define reader   : member   but not   allowed\n", [["missing-definition", 6, 41, 48]]],
  ["model 1.1 one of the intersection relation is not valid", "model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user]\n    define reader: member and allowed\n", [["missing-definition", 6, 30, 37]]],
  ["invalid type name for self", "model\n  schema 1.1\ntype user\ntype self\n  relations\n    define member: [user]\n", [["reserved-type-keywords", 3, 5, 9]]],
  ["invalid type name for this", "model\n  schema 1.1\ntype user\ntype this\n  relations\n    define member: [user]\n", [["reserved-type-keywords", 3, 5, 9]]],
  ["invalid relation name for self", "model\n  schema 1.1\ntype user\ntype group\n  relations\n    define self: [user]\n", [["reserved-relation-keywords", 5, 11, 15]]],
  ["invalid relation name for this", "model\n  schema 1.1\ntype user\ntype group\n  relations\n    define this: [user]\n", [["reserved-relation-keywords", 5, 11, 15]]],
  ["invalid type name", "model\n  schema 1.1\ntype user\ntype aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n  relations\n    define member: [user]\n", [["invalid-name", 3, 5, 349]]],
  ["invalid relation name", "model\n  schema 1.1\ntype user\ntype org\n  relations\n    define aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: [user]\n", [["invalid-name", 5, 11, 111]]],
  ["no entry point for multiple type", "model\n  schema 1.1\ntype user\ntype team\n  relations\n    define parent: [group]\n    define viewer: viewer from parent\ntype group\n  relations\n    define parent: [team]\n    define viewer: viewer from parent\n", [["relation-no-entry-point", 6, 11, 17], ["relation-no-entry-point", 10, 11, 17]]],
  ["no entry point for single type multiple relations", "model\n  schema 1.1\ntype user\ntype group\n  relations\n    define parent: [group]\n    define viewer: viewer from parent\n", [["relation-no-entry-point", 6, 11, 17]]],
  ["no entry point for single type single relation", "model\n  schema 1.1\ntype user\ntype group\n  relations\n    define group: group from group\n", [["tupleuserset-not-direct", 5, 29, 34]]],
  ["parent relation used inside contains a write", "model\n  schema 1.1\ntype user\ntype folder\n  relations\n    define parent: [folder] or parent from parent\n    define viewer: [user] or viewer from parent\n", [["tupleuserset-not-direct", 5, 43, 49], ["tupleuserset-not-direct", 6, 41, 47]]],
  ["from target relation is valid", "model\n  schema 1.1\ntype user\ntype group\n  relations\n    define parent: [group]\n    define viewer: reader from parent\n", [["invalid-relation-on-tupleset", 6, 19, 37]]],
  ["org is not a relation for group", "model\n  schema 1.1\ntype user\ntype org\ntype group\n  relations\n    define parent: [group]\n    define viewer: org from parent\n", [["invalid-relation-on-tupleset", 7, 19, 34]]],
  ["invalid type is used", "model\n  schema 1.1\ntype user\ntype group\n  relations\n    define parent: [unknown]\n", [["invalid-type", 5, 20, 27]]],
  ["handles single character types and relations", "model\n  schema 1.1\n\n  type t\n\n  type x\n    relations\n      define a: [u]\n      define b: [t#z]\n      define c: b from z\n      define d: [t]\n      define e: z from d\n      define f: d but not z\n", [["invalid-type", 7, 17, 18], ["invalid-relation-type", 8, 17, 20], ["invalid-relation-type", 9, 16, 24], ["invalid-relation-on-tupleset", 11, 16, 24], ["missing-definition", 12, 26, 27]]],
  ["from target relation is not a valid relation for the from child", "model\n  schema 1.1\ntype user\ntype org\ntype group\n  relations\n    define parent: [group]\n    define viewer: viewer from org\n", [["invalid-relation-type", 7, 19, 34]]],
  ["direct relation assignment not found", "model\n  schema 1.1\ntype user\ntype org\ntype group\n  relations\n    define parent: [group, group#org]\n", [["invalid-relation-type", 6, 27, 36]]],
  ["duplicate types", "model\n  schema 1.1\ntype user\ntype user\n", [["duplicated-error", 2, 5, 9]]],
  ["duplicate type in relations", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user, user]\n", [["duplicated-error", 5, 20, 24]]],
  ["duplicate type relation in relations", "model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user]\ntype document\n  relations\n    define viewer: [group#member, group#member]\n", [["duplicated-error", 8, 20, 32]]],
  ["duplicate type wildcard in relations", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user:*, user:*]\n", [["duplicated-error", 5, 20, 26]]],
  ["duplicate relation union in relations", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user]\n    define editor: viewer or viewer\n", [["duplicated-error", 6, 19, 25]]],
  ["duplicate relation intersection in relations", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user]\n    define editor: viewer and viewer\n", [["duplicated-error", 6, 19, 25]]],
  ["duplicate relation difference in relations", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user]\n    define editor: viewer but not viewer\n", [["duplicated-error", 6, 19, 25]]],
  ["duplicate type in relationship definition", "model\n  schema 1.1\ntype user\ntype team\n  relations\n    define member: [user, user]\n", [["duplicated-error", 5, 20, 24]]],
  ["duplicate wildcard type in relationship definition", "model\n  schema 1.1\ntype user\ntype folder\n  relations\n    define member: [user:*, user:*]\n", [["duplicated-error", 5, 20, 26]]],
  ["duplicate relationship symbol in union relationship definition", "model\n  schema 1.1\ntype user\ntype team\n  relations\n    define viewer: [user]\n    define member: viewer or viewer\n", [["duplicated-error", 6, 19, 25]]],
  ["duplicate relationship symbol in intersection relationship definition", "model\n  schema 1.1\ntype user\ntype team\n  relations\n    define viewer: [user]\n    define member: viewer and viewer\n", [["duplicated-error", 6, 19, 25]]],
  ["duplicate relationship symbol in difference relationship definition", "model\n  schema 1.1\ntype user\ntype team\n  relations\n    define viewer: [user]\n    define member: viewer but not viewer\n", [["duplicated-error", 6, 19, 25]]],
  ["duplicate union relationship import in parent relationship definition", "model\n  schema 1.1\ntype user\ntype org\n  relations\n    define viewer: [user]\ntype group\n  relations\n    define parent: [group, org]\n    define viewer: viewer from parent or viewer from parent\n", [["duplicated-error", 9, 19, 37]]],
  ["duplicate intersection relationship import in parent relationship definition", "model\n  schema 1.1\ntype user\ntype org\n  relations\n    define viewer: [user]\ntype group\n  relations\n    define parent: [group, org]\n    define viewer: viewer from parent and viewer from parent\n", [["duplicated-error", 9, 19, 37]]],
  ["duplicate difference relationship import in parent relationship definition", "model\n  schema 1.1\ntype user\ntype org\n  relations\n    define viewer: [user]\ntype group\n  relations\n    define parent: [group, org]\n    define viewer: viewer from parent but not viewer from parent\n", [["duplicated-error", 9, 19, 37]]],
  ["duplicate in type name", "model\n  schema 1.1\ntype user\ntype organization\n  relations\n    define member: [user]\ntype group\n  relations\n    define member: [user]\ntype account\n  relations\n    define org: [organization]\n    define can_view: member from org\n    define viewer: member from org\ntype account\n  relations\n    define group: [group]\n    define viewer: member from group\n", [["duplicated-error", 9, 5, 12]]],
  ["handle single name duplicated type and unused condition", "model\n  schema 1.1\n\ntype t\n  relations\n    define a: [t, t]\ntype t\n\ncondition c(current_ip: ipaddress) {\n  current_ip.in_cidr(\"192.168.0.0/24\")\n}\n", [["duplicated-error", 5, 15, 16], ["duplicated-error", 3, 5, 6], ["condition-not-used", 8, 10, 11]]],
  ["condition not defined - single character", "model\n  schema 1.1\n\ntype user\n\ntype document\n  relations\n    define viewer: [user with c]\n", [["condition-not-defined", 7, 30, 31]]],
  ["condition not defined", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user with allowed_ip]\n", [["condition-not-defined", 5, 30, 40]]],
  ["extraneous condition", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user]\ncondition allowed_ip(current_ip: ipaddress) {\n  current_ip.in_cidr(\"192.168.0.0/24\")\n}\n", [["condition-not-used", 6, 10, 20]]],
  ["unsupported schema version should yield error", "model\n  schema 0.9\ntype user\ntype org\n  relations\n    define member: [user]\n", [["invalid-schema", 1, 9, 12]]],
  ["invalid schema version with a trailing comment on the schema line", "model\n  schema 1.5 # a comment\ntype user\n", [["invalid-schema", 1, 9, 12]]],
  ["supports parsing a modular model but throws schema required error", "module foo\ntype user\n", [["schema-version-required", 0, 0, 0]]],
  ["allows extend in modular model", "module foo\n\nextend type bar\n", [["schema-version-required", 0, 0, 0]]],
];

for (const kind of [...new Set(SEMANTIC.flatMap(([, , errors]) => errors.map((e) => e[0])))].sort()) {
  test(`${kind}: OpenFGA's language test data, at its positions`, (t) => {
    const cases = SEMANTIC.filter(([, , errors]) => errors.some((e) => e[0] === kind));
    t.true(cases.length > 0);
    for (const [name, dsl, expected] of cases) {
      const ours = parseDsl(dsl).errors.map((e): Expected => [e.kind, e.line.start, e.column.start, e.column.end]);
      t.deepEqual(ours, expected, name);
    }
  });
}
