/**
 * Every case of OpenFGA's syntax test data, transcribed from openfga/language
 * `tests/data/dsl-syntax-validation-cases.yaml` (commit db371bf4, Apache-2.0;
 * case names kept): each text gives exactly the expected errors (message,
 * line, columns) in OpenFGA's order, the errors its ANTLR parser's recovery
 * reports after the first one included, and each valid text gives none.
 * (The listener's checks, such as a relation defined twice, are in the data
 * too, with kind `syntax` here.)
 *
 * Positions are 0-based, the end column exclusive.
 * [case name, DSL, [[message, line, column start, column end], …]].
 */
import test from 'ava';
import { parseDsl } from '../../dsl/index.ts';

type Expected = [string, number, number, number];

const CASES: Array<[string, string, Expected[]]> = [
  ["no model header", "type user\n", [["extraneous input 'type' expecting {WHITESPACE, '#', 'module', 'model', NEWLINE}",0,0,4],["extraneous input 'user' expecting {'#', 'module', 'model', NEWLINE}",0,5,9],["mismatched input '<EOF>' expecting {'#', 'module', 'model'}",1,0,5]]],
  ["no schema value", "model\ntype user\n", [["mismatched input 'type' expecting 'schema'",1,0,4]]],
  ["schema required", "model\n  schema1.1\n", [["mismatched input 'schema1.1' expecting 'schema'",1,2,11]]],
  ["schema 1.1 required", "model\n  schema 11\n", [["mismatched input '11' expecting SCHEMA_VERSION",1,9,11]]],
  ["schema 1.1 required (2)", "model\n  schema a.b\n", [["mismatched input 'a.b' expecting SCHEMA_VERSION",1,9,12]]],
  ["a module with missing name", "module\n\ntype user\n", [["mismatched input '\\n\\n' expecting WHITESPACE",0,6,8]]],
  ["a module with missing name with whitespace", "module     \n\ntype user", [["mismatched input '\\n\\n' expecting WHITESPACE",0,6,8]]],
  ["no relations keyword", "model\n  schema 1.1\ntype user\ntype folder\n  define viewer: [user]\n", [["no viable alternative at input '\\n  define'",4,2,8]]],
  ["mixed operators", "model\n  schema 1.1\ntype user\n  relations\n    define own: [user]\n    define follower: [user]\n    define blocked: [user]\n    define viewer: [user] and follower or own but not blocked\n", [["mismatched input ' ' expecting {<EOF>, NEWLINE}",7,38,39]]],
  ["mixed operators with parens", "model\n  schema 1.1\ntype user\n  relations\n    define own: [user]\n    define follower: [user]\n    define blocked: [user]\n    define viewer: [user] and (follower but not blocked) or own\n", [["mismatched input ' ' expecting {<EOF>, NEWLINE}",7,56,57]]],
  ["mixed operators with mulitple paren sets", "model\n  schema 1.1\ntype user\n  relations\n    define own: [user]\n    define follower: [user]\n    define blocked: [user]\n    define viewer: [user] and (follower but not blocked) or (foo and bar) and (baz or foobar)\n", [["mismatched input ' ' expecting {<EOF>, NEWLINE}",7,56,57]]],
  ["mixed operators with mulitple operations and paren sets", "model\n  schema 1.1\ntype user\n  relations\n    define allowed: [user]\n    define follower: [user]\n    define blocked: [user]\n    define restricted: [user]\n    define viewer: [user] or allowed or follower or (blocked or restricted or (foo and bar but not baz))\n", [["extraneous input 'but not' expecting {')', WHITESPACE}",8,91,98],["extraneous input 'baz' expecting {')', WHITESPACE}",8,99,102]]],
  ["mixed operators with mixed operations and paren sets", "model\n  schema 1.1\ntype user\n  relations\n    define follower: [user]\n    define blocked: [user]\n    define restricted: [user]\n    define viewer: [user] and follower or (restricted but not blocked)\n", [["mismatched input ' ' expecting {<EOF>, NEWLINE}",7,38,39]]],
  ["mixed operators with mixed operations and paren sets", "model\n  schema 1.1\ntype user\n  relations\n    define follower: [user]\n    define blocked: [user]\n    define restricted: [user]\n    define viewer: [user] and (follower but not blocked but not restricted)\n", [["extraneous input 'but not' expecting {')', WHITESPACE}",7,56,63],["extraneous input 'restricted' expecting {')', WHITESPACE}",7,64,74]]],
  ["misspelled define", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    defne viewer: [user]\n", [["no viable alternative at input '\\n    defne'",5,4,9]]],
  ["duplicate relations", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user]\n    define viewer: [user]\ntype member\n", [["'viewer' is already defined in 'document'",6,11,17]]],
  ["mixture of 1.0 and 1.1 should yield error", "model\n  schema 1.1\ntype user\ntype org\n  relations\n    define member: [user]\ntype group\n  relations\n    define parent as self\n    define viewer as viewer from parent\n", [["missing ':' at 'as'",8,18,20],["mismatched input ' ' expecting {<EOF>, NEWLINE}",8,20,21]]],
  ["empty directly assignable relations with spaces should yield error", "model\n  schema 1.1\ntype user\ntype org\n  relations\n    define member: [ ]\n    define reader: [user]\n", [["extraneous input ']' expecting {IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER, NEWLINE}",5,21,22],["mismatched input 'define' expecting {IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",6,4,10],["mismatched input 'reader' expecting {',', ']'}",6,11,17]]],
  ["empty directly assignable relations without spaces should yield error", "model\n  schema 1.1\ntype user\ntype org\n  relations\n    define member: []\n    define reader: [user]\n", [["extraneous input ']' expecting {WHITESPACE, IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER, NEWLINE}",5,20,21],["mismatched input 'define' expecting {IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",6,4,10],["mismatched input 'reader' expecting {',', ']'}",6,11,17]]],
  ["model 1.1 has no directly allowed types in viewer", "model\n  schema 1.1\ntype user\ntype folder\n  relations\n    define parent: [folder]\n    define viewer as self or viewer from parent\n", [["missing ':' at 'as'",6,18,20],["mismatched input ' ' expecting {<EOF>, NEWLINE}",6,20,21]]],
  ["mixing 1.0 and 1.1 should not be allowed as non assignable self is not allowed", "model\n  schema 1.1\ntype user\ntype folder\n  relations\n    define reader: [user]\n    define viewer as self or reader\n", [["missing ':' at 'as'",6,18,20],["mismatched input ' ' expecting {<EOF>, NEWLINE}",6,20,21]]],
  ["should not allow no model schema", "type user\ntype group\n  relations\n    define group: [user] as self\n", [["extraneous input 'type' expecting {WHITESPACE, '#', 'module', 'model', NEWLINE}",0,0,4],["extraneous input 'user' expecting {'#', 'module', 'model', NEWLINE}",0,5,9],["mismatched input 'type' expecting {'#', 'module', 'model'}",1,0,4]]],
  ["incorrect wildcard restriction should be raised", "model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user, user:*:*]\n", [["mismatched input ':' expecting {',', WHITESPACE, ']'}",5,32,33]]],
  ["exclusion target not allow to reference itself in TTU", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define editor: [user]\n    define viewer: editor but not [document#viewer]\n", [["extraneous input '[' expecting {'(', IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",6,34,35],["mismatched input '#' expecting {<EOF>, NEWLINE}",6,43,44]]],
  ["detect if every child in union are related", "model\n  schema 1.1\ntype document\n  relations\n    define viewer: [document#viewer] or [document#editor]\n    define editor: [document#viewer] or [document#editor]\n", [["extraneous input '[' expecting {'(', IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",4,40,41],["mismatched input '#' expecting {<EOF>, NEWLINE}",4,49,50]]],
  ["intersection child to reference other relations for same type", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define editor: [user]\n    define viewer: [user] and [document#editor]\n", [["extraneous input '[' expecting {'(', IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",6,30,31],["mismatched input '#' expecting {<EOF>, NEWLINE}",6,39,40]]],
  ["exclusion base to reference other relations for same type", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define editor: [user]\n    define viewer: [document#editor] but not [user]\n", [["extraneous input '[' expecting {'(', IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",6,45,46],["extraneous input ']' expecting {<EOF>, NEWLINE}",6,50,51]]],
  ["exclusion target to reference other relations for same type", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define editor: [user]\n    define viewer: [user] but not [document#editor]\n", [["extraneous input '[' expecting {'(', IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",6,34,35],["mismatched input '#' expecting {<EOF>, NEWLINE}",6,43,44]]],
  ["union child to reference other relations for same type", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define editor: [user]\n    define viewer: [user] or [document#editor]\n", [["extraneous input '[' expecting {'(', IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",6,29,30],["mismatched input '#' expecting {<EOF>, NEWLINE}",6,38,39]]],
  ["type restriction cannot contains both wildcard and relation", "model\n  schema 1.1\ntype user\ntype department\n  relations\n    define member: [user]\ntype org\n  relations\n    define reader: [department, department#member:*]\n", [["mismatched input ':' expecting {',', WHITESPACE, ']'}",8,49,50]]],
  ["simple group reference to itself", "model\n  schema 1.1\ntype user\ntype group\n  relations\n    define group: [group]\n", []],
  ["group has entry point to itself", "model\n  schema 1.1\ntype user\ntype org\n  relations\n    define viewer: [user]\ntype group\n  relations\n    define parent: [group, org]\n    define viewer: viewer from parent\n", []],
  ["intersection with directly related", "model\n  schema 1.1\ntype user\ntype org\n  relations\n    define member: [user]\ntype group\n  relations\n    define parent: [group]\n    define writer: [user, org#member]\n    define viewer: [user, org#member] or writer\n", []],
  ["should allow directly assigned as last item", "model\n  schema 1.1\ntype user\ntype org\n  relations\n    define member: [user]\ntype group\n  relations\n    define parent: [group]\n    define writer: [user, org#member]\n    define viewer: [user, org#member] or writer\n", []],
  ["union with directly related", "model\n  schema 1.1\ntype user\ntype org\n  relations\n    define member: [user]\ntype group\n  relations\n    define parent: [group]\n    define writer: [user, org#member]\n    define viewer: [user, org#member] and writer\n", []],
  ["union allow directly assigned as last item", "model\n  schema 1.1\ntype user\ntype org\n  relations\n    define member: [user]\ntype group\n  relations\n    define parent: [group]\n    define writer: [user, org#member]\n    define viewer: [user, org#member] and writer\n", []],
  ["but not with directly linked", "model\n  schema 1.1\ntype user\ntype docs\n  relations\n    define blocked: [user]\n    define can_view: [user] but not blocked\n", []],
  ["intersection with directly related and has spaces and blank lines", "model\n  schema 1.1\ntype user\ntype org\n\n  relations\n    define member: [user]\n\ntype group\n  relations\n    define parent: [group]\n    define writer: [user, org#member]\n    define viewer:    [   user,    org#member   ]       or    writer\n", []],
  ["model 1.1 tuple to userset", "model\n  schema 1.1\ntype folder\n  relations\n    define viewer: [user]\n\ntype document\n  relations\n    define parent: [folder]\n    define viewer: [user] or viewer from parent\ntype user\n", []],
  ["model 1.1 allow TTU with relations as long as 1 child has such relation", "model\n  schema 1.1\ntype final\n  relations\n    define children: [child1, child2]\n    define has_assigned: u1 from children or u2 from children\ntype child1\n  relations\n    define role: [user]\n    define u1: role\ntype child2\n  relations\n    define role: [user]\n    define u2: role\ntype user\n", []],
  ["model 1.1 wildcard restricted type", "model\n  schema 1.1\ntype folder\n  relations\n    define viewer: [user, user:*]\n\ntype user\n", []],
  ["model 1.1 wildcard restricted type in the middle", "model\n  schema 1.1\ntype folder\n  relations\n    define viewer: [user, user:*, group]\n\ntype user\ntype group\n", []],
  ["model 1.1 with spacing in allowed type", "model\n  schema 1.1\ntype folder\n  relations\n    define viewer: [  user  , user:*  , group  ]\n\ntype user\ntype group\n", []],
  ["union does not require all child to have entry", "model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define admin: [user]\n    define action1: admin or action2 or action3\n    define action2: admin or action3 or action1\n    define action3: admin or action1 or action2\n", []],
  ["union does not require all child to have entry even for intersection child", "model\n  schema 1.1\ntype user\ntype docs\n  relations\n    define admin: [user]\n    define union1: admin or union2\n    define union2: admin or union1\n    define intersection1: union1 and union2\n    define intersection2: union1 and union2\n", []],
  ["union does not require all child to have entry even for exclusion child", "model\n  schema 1.1\ntype user\ntype docs\n  relations\n    define admin: [user]\n    define union1: admin or union2\n    define union2: admin or union1\n    define exclusion1: admin but not union1\n    define exclusion2: admin but not union2\n", []],
  ["union child allow to reference itself in TTU", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define editor: [user]\n    define viewer: [document#viewer] or editor\n", []],
  ["mixture of relations from relations for same type", "model\n  schema 1.1\ntype user\n\ntype document\n  relations\n    define restricted: [user]\n    define editor: [user]\n    define viewer: [document#viewer] or editor\n    define can_view: viewer but not restricted\n    define can_view_actual: can_view\n", []],
  ["extraneous spaces and newlines should still work", "\nmodel\n   schema 1.1\n type user\n", []],
  ["unsupported parameter type map<map>", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user with is_not_deleted]\ncondition is_not_deleted(status: map<map>) {\n  status != \"deleted\"\n}\n", [["mismatched input 'map' expecting CONDITION_PARAM_TYPE",6,37,40]]],
  ["unsupported parameter type list<map>", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user with is_not_deleted]\ncondition is_not_deleted(status: list<map>) {\n  status != \"deleted\"\n}\n", [["mismatched input 'map' expecting CONDITION_PARAM_TYPE",6,38,41]]],
  ["unsupported parameter type map<list>", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user with is_not_deleted]\ncondition is_not_deleted(status: map<list>) {\n  status != \"deleted\"\n}\n", [["mismatched input 'list' expecting CONDITION_PARAM_TYPE",6,37,41]]],
  ["unsupported parameter type list<list>", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user with is_not_deleted]\ncondition is_not_deleted(status: list<list>) {\n  status != \"deleted\"\n}\n", [["mismatched input 'list' expecting CONDITION_PARAM_TYPE",6,38,42]]],
  ["parameter type list needs generic type", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user with is_not_deleted]\ncondition is_not_deleted(status: list) {\n  status != \"deleted\"\n}\n", [["mismatched input ')' expecting '<'",6,37,38]]],
  ["parameter type map needs generic type", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user with is_not_deleted]\ncondition is_not_deleted(status: map) {\n  status != \"deleted\"\n}\n", [["mismatched input ')' expecting '<'",6,36,37]]],
  ["having no parameter name should fail", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user with is_not_deleted]\ncondition is_not_deleted(string) {\n  status != \"deleted\"\n}\n", [["mismatched input 'string' expecting {WHITESPACE, IDENTIFIER, NEWLINE}",6,25,31],["mismatched input 'status' expecting <EOF>",7,2,8]]],
  ["condition names cannot be duplicated", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user with is_not_deleted]\ncondition is_not_deleted(status: string) {\n  status != \"deleted\"\n}\ncondition is_not_deleted(status: string) {\n  status != \"deleted\"\n}\n", [["condition 'is_not_deleted' is already defined in the model",9,10,24]]],
  ["parameter names cannot be duplicated", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define viewer: [user with is_not_deleted]\ncondition is_not_deleted(status: string, status: string) {\n  status != \"deleted\"\n}\n", [["parameter 'status' is already defined in the condition 'is_not_deleted'",6,41,47]]],
  ["an invalid model with multiple type restriction instances in a relation definition", "model\n  schema 1.1\ntype user\n  relations\n    define viewer: [user] or [user]\n", [["extraneous input '[' expecting {'(', IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",4,29,30],["extraneous input ']' expecting {<EOF>, NEWLINE}",4,34,35]]],
  ["an invalid model with confusing but not references", "model\n  schema 1.1\ntype user\n  relations\n    define rel1: [user]\n    define rel2: [user]\n    define rel3: [user]\n    define rel4: rel1 but not rel2 but not rel3\n", [["mismatched input ' ' expecting {<EOF>, NEWLINE}",7,34,35]]],
  ["an invalid model with mixed operators", "model\n  schema 1.1\ntype user\n  relations\n    define rel1: [user]\n    define rel2: [user]\n    define rel3: [user]\n    define rel4: rel1 and rel2 or rel3\n", [["mismatched input ' ' expecting {<EOF>, NEWLINE}",7,30,31]]],
  ["an invalid model x1", "model\n  schema 1.1\ntype user\n  relations\n    define rel1: [user]\n    define rel2: but not rel1\n", [["mismatched input 'but not' expecting {'[', '(', IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",5,17,24]]],
  ["an invalid model x2", "model\n  schema 1.1\ntype user\n  relations\n    define rel1: [user]\n    define rel2: or rel1\n", [["mismatched input 'or' expecting {'[', '(', IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",5,17,19]]],
  ["an invalid model x3", "model\n  schema 1.1\ntype user\n  relations\n    define rel1: [user]\n    define rel2: and rel1\n", [["mismatched input 'and' expecting {'[', '(', IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",5,17,20]]],
  ["an invalid model with the type definition not in the first place x1", "model\n  schema 1.1\ntype user\n  relations\n    define rel1: [user]\n    define rel2: rel1 and [user]\n", [["extraneous input '[' expecting {'(', IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",5,26,27],["extraneous input ']' expecting {<EOF>, NEWLINE}",5,31,32]]],
  ["an invalid model with the type definition not in the first place x2", "model\n  schema 1.1\ntype user\n  relations\n    define rel1: [user]\n    define rel2: [user]\n    define rel3: [user]\n    define relation: rel3 or ((rel1 and rel2) but not [user])\n", [["extraneous input '[' expecting {'(', IDENTIFIER, 'module', 'model', 'schema', 'extend', 'type', 'relation', EXTENDED_IDENTIFIER}",7,54,55],["extraneous input ']' expecting {')', WHITESPACE}",7,59,60]]],
  ["does not allow module and model", "model\n  schema 1.1\nmodule foo\n\ntype user\n", [["no viable alternative at input '\\nmodule'",2,0,6]]],
  ["does not allow extend in model", "model\n  schema 1.1\n\nextend type foo\n", [["extend can only be used in a modular model",3,12,15]]],
  ["disallows multiple extends for same type", "module foo\n\nextend type bar\n\nextend type bar\n\nextend type bar\n", [["'bar' is already extended in file.",4,12,15],["'bar' is already extended in file.",6,12,15]]],
];

/** The valid texts of the same file. */
const VALID: Array<[string, string]> = [
  ["valid syntax (1)", "model\n  schema 1.1\n"],
  ["valid syntax (2): comment preceding model", "# ID: 123\nmodel\n  schema 1.1\n"],
  ["valid syntax (3): extraneous spacing", "model\n  schema 1.1\ntype user    \ntype folder    \n        \n  relations     \n    define admin: [user]     \n    define viewer: [user]   \n      \n    define can_view: viewer or admin\n"],
  ["valid syntax (4): extended identifiers", "model\n  schema 1.1\ntype a\ntype _a\ntype __a__\ntype a/b\ntype _.a_/_b._\ntype a.bc/def\ntype a.b\n  relations\n    define a.b.c: [a/b]\n    define a.b/c: [_.a_/_b._]\n"],
  ["comments inbetween relationships", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    # This is a comment 1\n    define viewer: [user]\n    # This is a comment 2\n    define owner: [user]\n"],
  ["a model with a valid condition and type restrictions", "model\n  schema 1.1\ntype user\n  relations\n    define follower: [user, user:*, user#follower, user with is_not_hidden, user:* with is_not_hidden, user#follower with is_not_hidden]\ncondition is_not_hidden(status: string) {\n  status != \"hidden\"\n}\n"],
  ["a valid model with multiple operators", "model\n  schema 1.1\ntype user\n  relations\n    define rel1: [user]\n    define rel2: [user]\n    define rel3: [user]\n    define rel4: [user]\n    define rel5: [user]\n    define rel6: [user]\n    define rel7: [user]\n    define rel8: [user]\n    define rel9: (rel1 or rel2 or rel3) but not ((rel4 and rel5 and rel6) but not (rel7 but not rel8))\n"],
  ["a valid model with multiple operators x2", "model\n  schema 1.1\ntype user\n  relations\n    define rel1: [user]\n    define rel2: [user]\n    define rel3: [user]\n    define rel4: [user]\n    define rel5: [user]\n    define rel6: [user]\n    define rel7: [user]\n    define rel8: [user]\n    define rel9: ((rel1 or rel2 or rel3) but not ((rel4 and rel5 and rel6) but not (rel7 but not rel8)))\n"],
  ["a valid model should not error", "model\n  schema 1.1\ntype user\ntype document\n  relations\n    define editor: [team#member]\ntype team\n  relations\n    define member: [user]\n"],
  ["a valid model with comments should not have errors", "# comment 1\nmodel\n  # comment 2\n  schema 1.1\n     # comment 3\ntype user\n\n# comment 4\ntype document\n  # comment 5\n  relations\n  # comment 6\n    define editor: [team#member] # a comment\n\n  # comment 7\n    define viewer: [user] or editor # another comment\n\n  # comment 8\n  # comment 9\n\ntype team\n  relations\n    define member: [user]\n"],
  ["a valid model with type names doesnt conflict with condition parameter types", "model\n  schema 1.1\ntype list\ntype map\n"],
  ["a valid model with type names doesn't conflict with built-in keywords", "model\n  schema 1.1\ntype user\ntype model\n  relations\n    define model: [user]\n    define schema: [user]\n    define type: [user]\n    define relation: [user]\n    define module: [user]\n    define extend: [user]\n    define other: [model,schema,type,relation,module,extend]\n    define another: model or schema or type or relation or module or extend\ntype schema\n  relations\n    define model: [user]\n    define schema: [user]\n    define type: [user]\n    define relation: [user]\n    define module: [user]\n    define extend: [user]\n    define other: [model,schema,type,relation,module,extend]\n    define another: model or schema or type or relation or module or extend\ntype type\n  relations\n    define model: [user]\n    define schema: [user]\n    define type: [user]\n    define relation: [user]\n    define module: [user]\n    define extend: [user]\n    define other: [model,schema,type,relation,module,extend]\n    define another: model or schema or type or relation or module or extend\ntype relation\n  relations\n    define model: [user]\n    define schema: [user]\n    define type: [user]\n    define relation: [user]\n    define module: [user]\n    define extend: [user]\n    define other: [model,schema,type,relation,module,extend]\n    define another: model or schema or type or relation or module or extend\ntype module\n  relations\n    define model: [user]\n    define schema: [user]\n    define type: [user]\n    define relation: [user]\n    define module: [user]\n    define extend: [user]\n    define other: [model,schema,type,relation,module,extend]\n    define another: model or schema or type or relation or module or extend\ntype extend\n  relations\n    define model: [user]\n    define schema: [user]\n    define type: [user]\n    define relation: [user]\n    define module: [user]\n    define extend: [user]\n    define other: [model,schema,type,relation,module,extend]\n    define another: model or schema or type or relation or module or extend\n"],
];

const seen = new Map<string, number>();
const title = (name: string): string => {
  const n = (seen.get(name) ?? 0) + 1;
  seen.set(name, n);
  return n === 1 ? name : `${name} (${n})`;
};

for (const [name, dsl, expected] of CASES) {
  test(`syntax data: ${title(name)}`, (t) => {
    const errors = parseDsl(dsl).errors;
    t.deepEqual(
      errors.map((e): Expected => [e.message, e.line.start, e.column.start, e.column.end]),
      expected,
    );
    t.true(errors.every((e) => e.kind === 'syntax' && e.line.end === e.line.start));
  });
}

for (const [name, dsl] of VALID) {
  test(`syntax data, valid: ${title(name)}`, (t) => {
    t.deepEqual(parseDsl(dsl).errors, []);
  });
}

test('the data holds every case of the file: 69 with errors (74 errors) and 12 valid', (t) => {
  t.is(CASES.length, 69);
  t.is(CASES.reduce((n, [, , e]) => n + e.length, 0), 74);
  t.is(VALID.length, 12);
});
