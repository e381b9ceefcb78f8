// Unit tests of the tokenizer's parts: Rust's char classes, the PCRE2 wrapper, split
// behaviours, added-token matching and the BPE merge engine.
#include <chrono>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/char_class.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/regex.h"

namespace tessera::tok {
namespace {

TEST(TokenizerUtf8, RustCharClasses) {
  EXPECT_TRUE(is_unicode_whitespace(0x85));
  EXPECT_TRUE(is_unicode_whitespace(0x3000));
  EXPECT_FALSE(is_unicode_whitespace(0x200B));  // zero width space is not White_Space
  EXPECT_TRUE(is_unicode_alphanumeric(U'é'));
  EXPECT_TRUE(is_unicode_alphanumeric(U'٣'));
  EXPECT_FALSE(is_unicode_alphanumeric(U'_'));
  EXPECT_FALSE(is_unicode_alphanumeric(U'!'));
}

TEST(TokenizerRegex, Gpt2PatternSplitsLikeHf) {
  Regex re(kGpt2Pattern);
  const std::string text = "Hello world's  \n 123\xE4\xBD\xA0\xE5\xA5\xBD!!";
  std::vector<std::pair<size_t, size_t>> m;
  re.find_all(text, m);
  std::vector<std::string> parts;
  for (auto [b, e] : m) parts.push_back(text.substr(b, e - b));
  EXPECT_EQ(parts, (std::vector<std::string>{"Hello", " world", "'s", "  \n", " 123",
                                              "\xE4\xBD\xA0\xE5\xA5\xBD", "!!"}));
}

TEST(TokenizerRegex, WhitespaceClassIsUnicodeWhiteSpace) {
  // PCRE2's own \s misses U+0085; the rewrite makes it Oniguruma's White_Space.
  Regex re("\\s+");
  std::vector<std::pair<size_t, size_t>> m;
  re.find_all("a\xC2\x85" "b", m);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0], (std::pair<size_t, size_t>{1, 3}));
  EXPECT_EQ(rewrite_whitespace_classes("[^\\s\\p{L}]"),
            "[^\\t\\n\\x{0B}\\x{0C}\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
            "\\x{202F}\\x{205F}\\x{3000}\\p{L}]");
}

TEST(TokenizerRegex, BadPatternIsAnError) {
  EXPECT_THROW(Regex("(unclosed"), Error);
}

std::vector<std::string> split(std::string_view text, SplitBehavior b, bool invert = false) {
  std::vector<std::pair<size_t, size_t>> m;
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '-') m.emplace_back(i, i + 1);
  std::vector<std::string> out;
  for (auto p : split_by_matches(text, m, b, invert)) out.emplace_back(p);
  return out;
}

TEST(TokenizerPreTokenizer, SplitBehavioursMatchTheReferenceDocs) {
  // The examples of tokenizers' SplitDelimiterBehavior documentation.
  using V = std::vector<std::string>;
  const std::string s = "the-final--countdown";
  EXPECT_EQ(split(s, SplitBehavior::Removed), (V{"the", "final", "countdown"}));
  EXPECT_EQ(split(s, SplitBehavior::Isolated), (V{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split(s, SplitBehavior::MergedWithPrevious), (V{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split(s, SplitBehavior::MergedWithNext), (V{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split(s, SplitBehavior::Contiguous), (V{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(split(s, SplitBehavior::Removed, true), (V{"-", "-", "-"}));
}

TEST(TokenizerPreTokenizer, MetaspaceFirstPrependsOnlyAtTheStart) {
  PreTokenizer pre;
  PreTokenizerStep m{};
  m.kind = PreTokenizerStep::Kind::Metaspace;
  m.prepend_scheme = PrependScheme::First;
  m.split = false;
  pre.steps.push_back(m);
  std::vector<Piece> out;
  pre.apply({"a b", true, false}, out);
  pre.apply({"c", false, false}, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].text, "\xE2\x96\x81" "a" "\xE2\x96\x81" "b");
  EXPECT_EQ(out[1].text, "c");
}

struct Matcher {
  std::vector<AddedToken> toks;
  AddedTokenMatcher m;
  explicit Matcher(std::vector<AddedToken> t) : toks(std::move(t)) {
    std::vector<std::pair<std::string, const AddedToken*>> v;
    for (const auto& x : toks) v.emplace_back(x.content, &x);
    m.build(v);
  }
  std::string run(std::string_view text) const {
    std::string out;
    for (const auto& s : m.split(text))
      out += s.id >= 0 ? "[" + std::to_string(s.id) + "]" : "(" + std::string(text.substr(s.b, s.e - s.b)) + ")";
    return out;
  }
};

TEST(TokenizerAddedTokens, LeftmostLongestWithStripAndSingleWord) {
  AddedToken a{1, "<a>"}, ab{2, "<a><b>"}, m{3, "<m>"}, w{4, "tok"};
  m.lstrip = m.rstrip = true;
  w.single_word = true;
  Matcher mt({a, ab, m, w});
  EXPECT_EQ(mt.run("x<a><b>y<a>"), "(x)[2](y)[1]");        // longest at the leftmost start
  EXPECT_EQ(mt.run("x  <m>  y"), "(x)[3](y)");             // whitespace swallowed both sides
  EXPECT_EQ(mt.run("tok token tok_ a tok"), "[4]( token tok_ a )[4]");  // only free-standing
  EXPECT_EQ(mt.run(""), "");
  EXPECT_EQ(mt.run("<a"), "(<a)");
}

std::shared_ptr<Vocab> make_vocab(const std::vector<std::string>& pieces) {
  auto v = std::make_shared<Vocab>();
  for (size_t i = 0; i < pieces.size(); ++i) v->set(static_cast<int32_t>(i), pieces[i]);
  return v;
}

std::vector<int32_t> run(const Bpe& bpe, std::string_view w) {
  std::vector<int32_t> out;
  bpe.tokenize(w, out);
  return out;
}

TEST(TokenizerBpe, LowestRankMergesFirstThenLeftmost) {
  auto v = make_vocab({"a", "b", "c", "ab", "bc", "abc", "aa"});
  Bpe by_bc(v, {{"b", "c"}, {"a", "b"}, {"a", "bc"}}, {});
  EXPECT_EQ(run(by_bc, "abc"), (std::vector<int32_t>{5}));  // b+c, then a+bc
  Bpe by_ab(v, {{"a", "b"}, {"b", "c"}}, {});
  EXPECT_EQ(run(by_ab, "abc"), (std::vector<int32_t>{3, 2}));  // ab + c: no (ab, c) merge
  Bpe aa(v, {{"a", "a"}}, {});
  EXPECT_EQ(run(aa, "aaa"), (std::vector<int32_t>{6, 0}));  // equal rank: leftmost first
}

TEST(TokenizerBpe, ByteFallbackUnknownAndFusion) {
  std::vector<std::string> pieces = {"<unk>", "a"};
  for (int b = 0; b < 256; ++b) pieces.push_back(fmt::format("<0x{:02X}>", b));
  auto v = make_vocab(pieces);
  const std::vector<Bpe::MergeIds> no_merges;
  BpeOptions fb;
  fb.byte_fallback = true;
  fb.unk_token = "<unk>";
  Bpe with_fb(v, no_merges, fb);
  EXPECT_EQ(run(with_fb, "a\xC3\xA9"), (std::vector<int32_t>{1, 2 + 0xC3, 2 + 0xA9}));
  BpeOptions unk;
  unk.unk_token = "<unk>";
  unk.fuse_unk = true;
  Bpe fused(v, no_merges, unk);
  EXPECT_EQ(run(fused, "\xC3\xA9\xC3\xA9" "a"), (std::vector<int32_t>{0, 1}));
  unk.fuse_unk = false;
  Bpe unfused(v, no_merges, unk);
  EXPECT_EQ(run(unfused, "\xC3\xA9\xC3\xA9" "a"), (std::vector<int32_t>{0, 0, 1}));
  Bpe none(v, no_merges, {});
  EXPECT_EQ(run(none, "\xC3\xA9" "a"), (std::vector<int32_t>{1}));  // no unk: dropped, as the reference
}

TEST(TokenizerBpe, MergeTableErrorsNameTheMerge) {
  auto v = make_vocab({"a", "b"});
  try {
    Bpe bad(v, {{"a", "b"}}, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"ab\""), std::string::npos) << e.what();
  }
}

TEST(TokenizerBpe, LongWordIsNotQuadratic) {
  // A doubling merge ladder over a 2 MB word: O(n log n) finishes in well
  // under a second; a rescan per merge would take hours.
  std::vector<std::string> pieces = {"a"};
  std::vector<std::pair<std::string, std::string>> merges;
  for (int k = 1; k <= 12; ++k) {
    pieces.push_back(std::string(size_t{1} << k, 'a'));
    merges.emplace_back(std::string(size_t{1} << (k - 1), 'a'), std::string(size_t{1} << (k - 1), 'a'));
  }
  Bpe bpe(make_vocab(pieces), merges, {});
  const std::string word(2 << 20, 'a');
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = run(bpe, word);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(ids.size(), (2u << 20) / 4096);
  EXPECT_LT(s, 10.0);
}

TEST(TokenizerVocab, FindsEveryPieceThroughGrowthAndDuplicates) {
  // Enough pieces to grow the table several times; a std::map as the oracle.
  Vocab v;
  std::map<std::string, int32_t> want;
  std::mt19937 rng(7);
  for (int32_t id = 0; id < 20000; ++id) {
    std::string piece;
    for (int n = 1 + static_cast<int>(rng() % 6); n > 0; --n) piece += static_cast<char>('a' + rng() % 5);
    v.set(id, piece);
    want[piece] = id;  // a later duplicate answers the piece
  }
  ASSERT_EQ(v.size(), 20000u);
  for (const auto& [piece, id] : want) {
    ASSERT_EQ(v.find(piece), id) << piece;
  }
  EXPECT_EQ(v.find("zz"), std::nullopt);
  EXPECT_EQ(v.find(""), std::nullopt);
  // Ids keep their own spelling, duplicates included; unset ids are empty.
  v.set(20005, "\xE2\x96\x81hello");
  EXPECT_EQ(v.size(), 20006u);
  EXPECT_EQ(v.piece(20005), "\xE2\x96\x81hello");
  EXPECT_EQ(v.piece(20003), "");
  EXPECT_EQ(v.find("\xE2\x96\x81hello"), 20005);
  // An id set again takes the new piece; the old one is gone.
  v.set(20005, "other");
  EXPECT_EQ(v.piece(20005), "other");
  EXPECT_EQ(v.find("other"), 20005);
  EXPECT_EQ(v.find("\xE2\x96\x81hello"), std::nullopt);
}

TEST(TokenizerBpe, MergeTableKeepsTheLastDuplicateAndCountsDistinctPairs) {
  auto v = make_vocab({"a", "b", "ab", "ba"});
  Bpe bpe(v, {{"a", "b"}, {"b", "a"}, {"a", "b"}}, {});
  EXPECT_EQ(bpe.num_merges(), 2u);
  EXPECT_EQ(bpe.merge_rank(0, 1), 2u);  // the later duplicate
  EXPECT_EQ(bpe.merge_rank(1, 0), 1u);
  EXPECT_EQ(bpe.merge_rank(0, 0), std::nullopt);
  EXPECT_EQ(bpe.merge_rank(-1, -1), std::nullopt);  // the empty slots' key
}

TEST(TokenizerByteLevel, TableIsGpt2s) {
  const auto& t = byte_level_table();
  EXPECT_EQ(t.byte_to_utf8[' '], "\xC4\xA0");   // Ġ
  EXPECT_EQ(t.byte_to_utf8['\n'], "\xC4\x8A");  // Ċ
  EXPECT_EQ(t.byte_to_utf8['A'], "A");
  EXPECT_EQ(t.byte_to_utf8[0xAD], "\xC5\x83");  // Ń
  std::string back;
  ASSERT_TRUE(t.decode(t.encode(std::string("\x00\xff hi\n", 6)), back));
  EXPECT_EQ(back, std::string("\x00\xff hi\n", 6));
}

}  // namespace
}  // namespace tessera::tok
