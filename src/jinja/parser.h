// Parser of the Jinja subset used by chat templates: tokens (jinja/lexer.h)
// to an AST, with Jinja2 3.1's grammar and operator precedence.
//
// Statements: text, {{ expr }}, if/elif/else, for (tuple targets, `if`
// filter, else), set (names, tuples, ns.attr, block set), macro, break,
// continue, generation (transformers' extension: renders its body).
// Anything else Jinja has ({% call %}, {% filter %}, include/import/extends/
// block, recursive loops, *args) is rejected at parse time with an Error
// naming the feature and its line and column.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/lexer.h"
#include "jinja/value.h"

namespace tessera::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,  // literal
    Name,     // name
    List,     // args = items
    Tuple,    // args = items
    Dict,     // args = k0, v0, k1, v1, ...
    Attr,     // args[0].name
    Item,     // args[0][args[1]]
    Slice,    // args[0][args[1]:args[2]:args[3]] (missing parts are null)
    Call,     // args[0](args[1..], kwargs)
    Filter,   // args[0] | name(args[1..], kwargs)
    Test,     // args[0] is [not] name(args[1..], kwargs)
    Neg,      // -args[0]
    Pos,      // +args[0]
    Not,      // not args[0]
    And,      // args[0] and args[1]
    Or,       // args[0] or args[1]
    Binary,   // args[0] name args[1], name in + - * / // % **
    Concat,   // args[0] ~ args[1] ~ ...
    Compare,  // args[0] ops[0] args[1] ops[1] args[2] ... (Python chaining)
    Cond,     // args[0] if args[1] else args[2] (args[2] null: undefined)
  };
  Kind kind;
  int line = 0, col = 0;
  Value literal;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // Compare: ==, !=, <, <=, >, >=, in, notin
  bool negated = false;          // Test
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    Text,      // text
    Print,     // {{ expr }}
    If,        // conds[i] -> bodies[i]; bodies.size() == conds.size() + 1 when there is an else
    For,       // for targets in expr [if cond]: bodies[0], else bodies[1]
    Set,       // targets = expr; or ns_attr: targets[0].attr = expr
    SetBlock,  // targets[0] = rendered bodies[0] | filters
    FilterBlock,  // {% filter f | g %}bodies[0]{% endfilter %}: rendered bodies[0] | filters, printed
    Macro,     // name(params) bodies[0]
    Break,
    Continue,
    Scope,     // bodies[0] rendered as is ({% generation %})
  };
  Kind kind;
  int line = 0, col = 0;
  std::string text;                  // Text
  ExprPtr expr;                      // Print value, For iterable, Set value
  ExprPtr cond;                      // For filter
  std::vector<ExprPtr> conds;        // If
  std::vector<Body> bodies;
  std::vector<std::string> targets;  // For / Set names (more than one: tuple unpacking)
  bool tuple_target = false;         // `set a, = ...` / `for (a,) in ...`
  std::string attr;                  // Set of ns.attr
  std::string name;                  // Macro
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro (default may be null)
  std::vector<ExprPtr> filters;      // SetBlock: Filter exprs applied with args[0] null
};

struct Template {
  std::string origin;
  Body body;
};

// Maximum nesting of blocks and expressions; deeper input is an Error (so
// hostile templates cannot overflow the stack).
inline constexpr int kMaxParseDepth = 200;

Template parse_template(const std::string& source, const std::string& origin);

}  // namespace tessera::jinja
