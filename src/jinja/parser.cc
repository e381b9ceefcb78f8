#include "jinja/parser.h"

#include <charconv>
#include <cstdlib>
#include <set>

#include "core/error.h"

namespace tessera::jinja {
namespace {

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& origin) : toks_(std::move(tokens)), origin_(origin) {}

  Body parse_all() {
    std::string end;
    Body body = parse_body({}, &end);
    return body;
  }

 private:
  // ------------------------------------------------------------ helpers
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  const Token& next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }

  template <typename... Args>
  [[noreturn]] void error(const Token& t, fmt::format_string<Args...> f, Args&&... args) const {
    fail(origin_, location(t.line, t.col), f, std::forward<Args>(args)...);
  }

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::Eof: return "end of template";
      case TokenKind::Data: return "template text";
      case TokenKind::VarBegin: return "'{{'";
      case TokenKind::VarEnd: return "'}}'";
      case TokenKind::BlockBegin: return "'{%'";
      case TokenKind::BlockEnd: return "'%}'";
      case TokenKind::String: return "string literal";
      default: return "'" + t.text + "'";
    }
  }

  bool is_op(const char* op) const { return cur().kind == TokenKind::Operator && cur().text == op; }
  bool is_name(const char* n) const { return cur().kind == TokenKind::Name && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) error(cur(), "expected '{}', got {}", op, describe(cur()));
  }
  std::string expect_name() {
    if (cur().kind != TokenKind::Name) error(cur(), "expected a name, got {}", describe(cur()));
    return next().text;
  }
  void expect_block_end(const char* what) {
    if (cur().kind != TokenKind::BlockEnd)
      error(cur(), "expected end of '{}' tag ('%}}'), got {}", what, describe(cur()));
    next();
  }

  struct DepthGuard {
    Parser& p;
    DepthGuard(Parser& parser, const Token& t) : p(parser) {
      if (++p.depth_ > kMaxParseDepth) p.error(t, "template nests deeper than {} levels", kMaxParseDepth);
    }
    ~DepthGuard() { --p.depth_; }
  };

  ExprPtr make(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->col = at.col;
    return e;
  }

  // ------------------------------------------------------------ statements

  // Parses until a block tag named in `ends` (left unconsumed after its name:
  // the current token is the one following the tag name) or Eof.
  Body parse_body(const std::set<std::string>& ends, std::string* end_found) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.kind == TokenKind::Eof) {
        if (!ends.empty()) {
          std::string list;
          for (const auto& e : ends) list += (list.empty() ? "'" : " or '") + e + "'";
          error(t, "unexpected end of template, expected {}", list);
        }
        *end_found = "";
        return body;
      }
      if (t.kind == TokenKind::Data) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Text;
        s->line = t.line;
        s->col = t.col;
        s->text = t.text;
        body.push_back(std::move(s));
        next();
        continue;
      }
      if (t.kind == TokenKind::VarBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Print;
        s->line = t.line;
        s->col = t.col;
        s->expr = parse_tuple(true);
        if (cur().kind != TokenKind::VarEnd) error(cur(), "expected end of print statement ('}}}}'), got {}", describe(cur()));
        next();
        body.push_back(std::move(s));
        continue;
      }
      if (t.kind == TokenKind::BlockBegin) {
        const Token& tag = peek();
        if (tag.kind != TokenKind::Name) error(tag, "expected a tag name, got {}", describe(tag));
        if (ends.count(tag.text)) {
          next();
          next();
          *end_found = tag.text;
          return body;
        }
        next();
        body.push_back(parse_statement());
        continue;
      }
      error(t, "unexpected {}", describe(t));
    }
  }

  StmtPtr new_stmt(Stmt::Kind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->col = at.col;
    return s;
  }

  StmtPtr parse_statement() {
    const Token tag = next();  // the tag name
    DepthGuard guard(*this, tag);
    const std::string& n = tag.text;
    if (n == "if") return parse_if(tag);
    if (n == "for") return parse_for(tag);
    if (n == "set") return parse_set(tag);
    if (n == "macro") return parse_macro(tag);
    if (n == "break" || n == "continue") {
      if (loop_depth_ == 0) error(tag, "'{}' outside of a loop", n);
      expect_block_end(n.c_str());
      return new_stmt(n == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, tag);
    }
    if (n == "filter") {
      auto s = new_stmt(Stmt::Kind::FilterBlock, tag);
      s->filters.push_back(parse_filter(nullptr));
      while (skip_op("|")) s->filters.push_back(parse_filter(nullptr));
      expect_block_end("filter");
      std::string end;
      const int saved = loop_depth_;
      loop_depth_ = 0;
      s->bodies.push_back(parse_body({"endfilter"}, &end));
      loop_depth_ = saved;
      expect_block_end("endfilter");
      return s;
    }
    if (n == "generation") {
      expect_block_end("generation");
      auto s = new_stmt(Stmt::Kind::Scope, tag);
      std::string end;
      s->bodies.push_back(parse_body({"endgeneration"}, &end));
      expect_block_end("endgeneration");
      return s;
    }
    static const std::set<std::string> kUnsupported = {
        "call", "include", "import", "from", "extends", "block", "with", "autoescape", "trans"};
    if (kUnsupported.count(n)) error(tag, "unsupported Jinja feature: '{{% {} %}}' tag", n);
    static const std::set<std::string> kStray = {"endif", "endfor", "endset", "endmacro", "else", "elif",
                                                 "endgeneration", "endcall", "endfilter", "endblock"};
    if (kStray.count(n)) error(tag, "unexpected '{}' tag", n);
    error(tag, "unknown tag '{}'", n);
  }

  StmtPtr parse_if(const Token& tag) {
    auto s = new_stmt(Stmt::Kind::If, tag);
    // Jinja parses if/elif tests without conditional expressions.
    s->conds.push_back(parse_tuple(false, /*no_condexpr=*/true));
    expect_block_end("if");
    while (true) {
      std::string end;
      s->bodies.push_back(parse_body({"elif", "else", "endif"}, &end));
      if (end == "elif") {
        s->conds.push_back(parse_tuple(false, /*no_condexpr=*/true));
        expect_block_end("elif");
      } else if (end == "else") {
        expect_block_end("else");
        s->bodies.push_back(parse_body({"endif"}, &end));
        expect_block_end("endif");
        return s;
      } else {
        expect_block_end("endif");
        return s;
      }
    }
  }

  // Names (possibly a tuple) as assignment targets.
  void parse_targets(Stmt& s, bool allow_attr) {
    const bool paren = skip_op("(");
    while (true) {
      const Token& t = cur();
      std::string name = expect_name();
      if (allow_attr && !paren && s.targets.empty() && is_op(".")) {
        next();
        s.targets.push_back(name);
        s.attr = expect_name();
        return;
      }
      if (name == "true" || name == "false" || name == "none" || name == "True" || name == "False" ||
          name == "None")
        error(t, "cannot assign to '{}'", name);
      s.targets.push_back(name);
      if (!skip_op(",")) break;
      s.tuple_target = true;
      if (cur().kind != TokenKind::Name) break;
    }
    if (paren) {
      expect_op(")");
      s.tuple_target = true;
    }
  }

  StmtPtr parse_for(const Token& tag) {
    auto s = new_stmt(Stmt::Kind::For, tag);
    parse_targets(*s, false);
    if (!skip_name("in")) error(cur(), "expected 'in' in for loop, got {}", describe(cur()));
    s->expr = parse_tuple(false, /*no_condexpr=*/true);
    if (skip_name("if")) s->cond = parse_expression(true);
    if (is_name("recursive")) error(cur(), "unsupported Jinja feature: recursive loops");
    expect_block_end("for");
    ++loop_depth_;
    std::string end;
    s->bodies.push_back(parse_body({"endfor", "else"}, &end));
    --loop_depth_;
    if (end == "else") {
      expect_block_end("else");
      s->bodies.push_back(parse_body({"endfor"}, &end));
    }
    expect_block_end("endfor");
    return s;
  }

  StmtPtr parse_set(const Token& tag) {
    auto s = new_stmt(Stmt::Kind::Set, tag);
    parse_targets(*s, true);
    if (skip_op("=")) {
      s->expr = parse_tuple(true);
      expect_block_end("set");
      return s;
    }
    if (s->targets.size() != 1 || !s->attr.empty() || s->tuple_target)
      error(cur(), "expected '=' in set tag, got {}", describe(cur()));
    s->kind = Stmt::Kind::SetBlock;
    while (skip_op("|")) s->filters.push_back(parse_filter(nullptr));
    expect_block_end("set");
    std::string end;
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->bodies.push_back(parse_body({"endset"}, &end));
    loop_depth_ = saved;
    expect_block_end("endset");
    return s;
  }

  StmtPtr parse_macro(const Token& tag) {
    auto s = new_stmt(Stmt::Kind::Macro, tag);
    s->name = expect_name();
    expect_op("(");
    bool seen_default = false;
    while (!is_op(")")) {
      if (!s->params.empty()) expect_op(",");
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) error(cur(), "unsupported Jinja feature: macro *args / **kwargs");
      const Token& pt = cur();
      std::string p = expect_name();
      ExprPtr def;
      if (skip_op("=")) {
        def = parse_expression(true);
        seen_default = true;
      } else if (seen_default) {
        error(pt, "non-default argument '{}' follows default argument", p);
      }
      s->params.emplace_back(std::move(p), std::move(def));
    }
    expect_op(")");
    expect_block_end("macro");
    std::string end;
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->bodies.push_back(parse_body({"endmacro"}, &end));
    loop_depth_ = saved;
    if (cur().kind == TokenKind::Name && cur().text == s->name) next();
    expect_block_end("endmacro");
    return s;
  }

  // ------------------------------------------------------------ expressions

  bool at_expression_end() const {
    return cur().kind == TokenKind::VarEnd || cur().kind == TokenKind::BlockEnd || cur().kind == TokenKind::Eof ||
           is_op(")") || is_op("]") || is_op("}");
  }

  // Jinja's parse_tuple: comma-separated expressions form an implicit tuple.
  ExprPtr parse_tuple(bool with_condexpr_flag, bool no_condexpr = false, bool explicit_parens = false) {
    (void)with_condexpr_flag;
    const Token start = cur();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) {
        if (!skip_op(",")) break;
        is_tuple = true;
      }
      if (at_expression_end() || (no_condexpr && is_name("if"))) break;
      items.push_back(parse_expression(!no_condexpr));
    }
    if (!is_tuple) {
      if (items.empty()) {
        if (!explicit_parens) error(cur(), "expected an expression, got {}", describe(cur()));
      } else {
        return std::move(items[0]);
      }
    }
    auto e = make(Expr::Kind::Tuple, start);
    e->args = std::move(items);
    return e;
  }

  ExprPtr parse_expression(bool with_condexpr = true) {
    DepthGuard guard(*this, cur());
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    ExprPtr e = parse_or();
    while (is_name("if")) {
      const Token at = next();
      ExprPtr cond = parse_or();
      ExprPtr otherwise;
      if (skip_name("else")) otherwise = parse_condexpr();
      auto c = make(Expr::Kind::Cond, at);
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(otherwise));
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(Expr::Kind kind, const Token& at, ExprPtr l, ExprPtr r, std::string op = {}) {
    auto e = make(kind, at);
    e->name = std::move(op);
    e->args.push_back(std::move(l));
    e->args.push_back(std::move(r));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const Token at = next();
      e = binary(Expr::Kind::Or, at, std::move(e), parse_and());
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const Token at = next();
      e = binary(Expr::Kind::And, at, std::move(e), parse_not());
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      const Token at = next();
      DepthGuard guard(*this, at);
      auto e = make(Expr::Kind::Not, at);
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Token start = cur();
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().kind == TokenKind::Operator &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
           cur().text == ">" || cur().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && peek().kind == TokenKind::Name && peek().text == "in") {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(Expr::Kind::Compare, start);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token at = next();
      e = binary(Expr::Kind::Binary, at, std::move(e), parse_concat(), at.text);
    }
    return e;
  }

  ExprPtr parse_concat() {
    const Token start = cur();
    ExprPtr e = parse_math2();
    if (!is_op("~")) return e;
    auto c = make(Expr::Kind::Concat, start);
    c->args.push_back(std::move(e));
    while (skip_op("~")) c->args.push_back(parse_math2());
    return c;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token at = next();
      e = binary(Expr::Kind::Binary, at, std::move(e), parse_pow(), at.text);
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const Token at = next();
      e = binary(Expr::Kind::Binary, at, std::move(e), parse_unary(true), "**");
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    const Token at = cur();
    DepthGuard guard(*this, at);
    ExprPtr node;
    if (skip_op("-")) {
      node = make(Expr::Kind::Neg, at);
      node->args.push_back(parse_unary(false));
    } else if (skip_op("+")) {
      node = make(Expr::Kind::Pos, at);
      node->args.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token t = cur();
    switch (t.kind) {
      case TokenKind::Name: {
        next();
        auto e = make(Expr::Kind::Literal, t);
        if (t.text == "true" || t.text == "True") e->literal = Value::boolean(true);
        else if (t.text == "false" || t.text == "False") e->literal = Value::boolean(false);
        else if (t.text == "none" || t.text == "None") e->literal = Value::none();
        else {
          e->kind = Expr::Kind::Name;
          e->name = t.text;
        }
        return e;
      }
      case TokenKind::String: {
        std::string s;
        while (cur().kind == TokenKind::String) s += next().text;
        auto e = make(Expr::Kind::Literal, t);
        e->literal = Value::string(std::move(s));
        return e;
      }
      case TokenKind::Integer: {
        next();
        int64_t v = 0;
        auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
        if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size())
          error(t, "integer literal {} does not fit in 64 bits", t.text);
        auto e = make(Expr::Kind::Literal, t);
        e->literal = Value::integer(v);
        return e;
      }
      case TokenKind::Float: {
        next();
        auto e = make(Expr::Kind::Literal, t);
        e->literal = Value::floating(std::strtod(t.text.c_str(), nullptr));
        return e;
      }
      case TokenKind::Operator:
        if (t.text == "(") {
          next();
          ExprPtr e = parse_tuple(true, false, true);
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          next();
          auto e = make(Expr::Kind::List, t);
          while (!is_op("]")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("]")) break;
            e->args.push_back(parse_expression(true));
          }
          expect_op("]");
          return e;
        }
        if (t.text == "{") {
          next();
          auto e = make(Expr::Kind::Dict, t);
          while (!is_op("}")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("}")) break;
            e->args.push_back(parse_expression(true));
            expect_op(":");
            e->args.push_back(parse_expression(true));
          }
          expect_op("}");
          return e;
        }
        break;
      default:
        break;
    }
    error(t, "unexpected {}", describe(t));
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        next();
        node = parse_filter(std::move(node));
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Token at = next();
    DepthGuard guard(*this, at);
    if (at.text == ".") {
      const Token& t = cur();
      if (t.kind == TokenKind::Name) {
        auto e = make(Expr::Kind::Attr, at);
        e->name = next().text;
        e->args.push_back(std::move(node));
        return e;
      }
      if (t.kind == TokenKind::Integer) {
        auto e = make(Expr::Kind::Item, at);
        e->args.push_back(std::move(node));
        auto idx = make(Expr::Kind::Literal, t);
        idx->literal = Value::integer(std::strtoll(t.text.c_str(), nullptr, 10));
        next();
        e->args.push_back(std::move(idx));
        return e;
      }
      error(t, "expected an attribute name after '.', got {}", describe(t));
    }
    // '[': index or slice.
    ExprPtr parts[3];
    int colons = 0;
    while (true) {
      if (is_op("]")) break;
      if (is_op(":")) {
        next();
        if (++colons > 2) error(cur(), "too many ':' in slice");
        continue;
      }
      if (is_op(",")) error(cur(), "unsupported Jinja feature: tuple subscripts");
      if (parts[colons]) error(cur(), "expected ']' or ':', got {}", describe(cur()));
      parts[colons] = parse_expression(true);
    }
    expect_op("]");
    if (colons == 0) {
      if (!parts[0]) parts[0] = make(Expr::Kind::Tuple, at);  // x[] is x[()] in Jinja
      auto e = make(Expr::Kind::Item, at);
      e->args.push_back(std::move(node));
      e->args.push_back(std::move(parts[0]));
      return e;
    }
    auto e = make(Expr::Kind::Slice, at);
    e->args.push_back(std::move(node));
    for (auto& p : parts) e->args.push_back(std::move(p));
    return e;
  }

  void parse_call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) error(cur(), "unsupported Jinja feature: *args / **kwargs in calls");
      if (cur().kind == TokenKind::Name && peek().kind == TokenKind::Operator && peek().text == "=") {
        std::string key = next().text;
        next();
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.kwargs.empty()) error(cur(), "positional argument follows keyword argument");
        e.args.push_back(parse_expression(true));
      }
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr node) {
    DepthGuard guard(*this, cur());
    auto e = make(Expr::Kind::Call, cur());
    e->line = node->line;  // errors of a call point at what is called
    e->col = node->col;
    e->args.push_back(std::move(node));
    parse_call_args(*e);
    return e;
  }

  // After '|'. `node` may be null (filter section of a block set).
  ExprPtr parse_filter(ExprPtr node) {
    const Token at = cur();
    auto e = make(Expr::Kind::Filter, at);
    e->name = expect_name();
    while (skip_op(".")) e->name += "." + expect_name();
    e->args.push_back(std::move(node));
    if (is_op("(")) parse_call_args(*e);
    return e;
  }

  ExprPtr parse_test(ExprPtr node) {
    const Token at = next();  // 'is'
    auto e = make(Expr::Kind::Test, at);
    e->negated = skip_name("not");
    e->name = expect_name();
    while (skip_op(".")) e->name += "." + expect_name();
    e->args.push_back(std::move(node));
    const Token& t = cur();
    if (is_op("(")) {
      parse_call_args(*e);
    } else if ((t.kind == TokenKind::Name || t.kind == TokenKind::String || t.kind == TokenKind::Integer ||
                t.kind == TokenKind::Float || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) error(t, "cannot chain multiple tests with 'is'");
      e->args.push_back(parse_postfix(parse_primary()));
    }
    return e;
  }

  std::vector<Token> toks_;
  const std::string& origin_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Template parse_template(const std::string& source, const std::string& origin) {
  Template t;
  t.origin = origin;
  t.body = Parser(tokenize(source, origin), origin).parse_all();
  return t;
}

}  // namespace tessera::jinja
