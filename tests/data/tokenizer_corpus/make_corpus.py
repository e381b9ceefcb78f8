"""Writes the tokenizer parity corpus (run once; the files are committed).
python3 tests/data/tokenizer_corpus/make_corpus.py"""
from pathlib import Path

HERE = Path(__file__).resolve().parent
files = {}
files["prose_en.txt"] = """The quick brown fox jumps over the lazy dog. It's a well-known pangram; they've used it for decades.
"Don't worry," she said, "we'll be fine — I'm sure of it." He'd replied: 'You're right.'
In 1969, Apollo 11 landed on the Moon. Neil Armstrong's words were: "That's one small step for [a] man, one giant leap for mankind."
Mr. O'Neil's DOG'S bowl...   wasn't THERE! Why?? Because: (a) it rained; (b) nobody cared.
E-mail me at john.doe@example.com or visit https://example.org/path?query=1&x=y#frag.
Hyphen-ated words, em—dashes, en–dashes, ellipses… and “curly quotes” ‘too’.
ALL CAPS SENTENCE WITH SOME WORDS. MiXeD CaSe WoRdS aNd CamelCaseIdentifiers.
"""
files["code.txt"] = (
    "def fib(n):\n\tif n < 2:\n\t\treturn n\n\treturn fib(n - 1) + fib(n - 2)\n\n\n\nclass Foo:\n"
    "    def __init__(self, x: int = 0) -> None:\n        self.x = x  # comment\n        \n"
    "    def bar(self):\n        return {'a': [1, 2, 3], \"b\": (4, 5)}\n\n"
    "int main(int argc, char** argv) {\n    std::vector<int> v{1,2,3};\n    for (auto& x : v) { x *= 2; }\n"
    "    printf(\"%d\\n\", v[0]);\n    return 0;\n}\n"
    "   leading spaces\n\t\tleading tabs\ntrailing spaces   \ntrailing tab\t\n\r\nwindows line\r\n\r\n"
    "x  =  1\ny\t=\t2\n        z = [   ]\n" + " " * 17 + "deep\n" + "\n" * 6
    + "SELECT * FROM t WHERE a >= 10 AND b <> 'x';\n"
    "<div class=\"x\">&amp; &lt;tag&gt;</div>\n$ ls -la | grep '.txt' > out.log 2>&1\n// TODO: fix\n"
    "/* block */ #include <stdio.h>\n"
)
files["cjk.txt"] = (
    "我爱自然语言处理。今天天气很好，我们去公园散步吧！\n日本語のテキスト：ひらがな、カタカナ、漢字を含みます。東京は大きい都市です。\n"
    "한국어 문장입니다. 안녕하세요, 반갑습니다!\n繁體中文：臺灣、香港。简体中文：台湾、香港。\n"
    "混合English和中文text在一起。全角ＡＢＣ１２３と半角ABC123。\n𠀀𠀁𪚥 (CJK extension B)\n"
)
files["arabic.txt"] = (
    "مرحبا بالعالم! هذه جملة باللغة العربية.\nاللُّغَةُ العَرَبِيَّةُ جَمِيلَةٌ.\nעברית: שלום עולם.\n"
    "فارسی: سلام دنیا. اردو: ہیلو ورلڈ۔\nMixed RTL: abc مرحبا 123 שלום xyz\n٠١٢٣٤٥٦٧٨٩ ۰۱۲۳\n"
)
files["emoji.txt"] = (
    "Hello 👋 world 🌍!\nFamily: 👨‍👩‍👧‍👦 Couple: 👩‍❤️‍👨 Flags: 🇺🇸🇯🇵🇩🇪 🏴‍☠️ 🏳️‍🌈\n"
    "Skin tones: 👍🏻👍🏼👍🏽👍🏾👍🏿 Keycaps: 1️⃣ #️⃣ *️⃣\nText vs emoji: ☺ ☺️ ❤ ❤️ ✔︎ ✔️\n"
    "ZWJ: 🧑‍💻 👩🏽‍🚀 🐻‍❄️\n😀😃😄😁😆😅🤣😂🙂🙃😉😊😇\n"
)
files["combining.txt"] = (
    "Cafe\u0301 vs Café. Noe\u0308l. n\u0303 vs ñ.\n"
    "Zalgo: Z\u0351\u036b\u0343a\u0310\u0300l\u0308\u0315g\u034fo\u0316\u0317\n"
    "Vietnamese: Tiếng Việt có dấu: ờ ữ ặ ệ\nDevanagari: नमस्ते दुनिया। हिन्दी भाषा।\n"
    "Thai: สวัสดีชาวโลก ภาษาไทย\nA\u030a \u212b \u00c5 ﬁ ﬂ ligatures, ½ ² ³ superscripts, Ⅻ roman\n"
)
files["numbers.txt"] = (
    "0 1 12 123 1234 12345 123456 1234567890\n3.14159 2.71828 -42 +7 1e10 6.02e23 0xFF 0b1010\n"
    "1,000,000 1.000.000,00 $19.99 €5 ¥1000 50% 3/4\n2024-01-15T10:30:00Z 12:34:56 v1.2.3 192.168.0.1\n"
    "phone: +1 (555) 123-4567, ISBN 978-3-16-148410-0\n١٢٣ ४५६ ๗๘๙ ① ② ③\n"
)
files["special_glued.txt"] = (
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there!<|im_end|>\n"
    "word<|endoftext|>word <|endoftext|> <|endoftext|>x\n<start_of_turn>user\nhi<end_of_turn>\n"
    "<start_of_turn>model\n<bos>text<eos> <pad><unk> <mask>\n<think>reasoning</think> answer\n"
    "<|nonexistent|> <not_a_token> <|im_start  |> < |im_end| >\n<|im_start|><|im_end|><|im_start|>\n"
    "  <|im_start|>  spaced  <|im_end|>  \nfoo_<|im_end|>_bar a<mask>b <mask> x\n"
)
files["whitespace.txt"] = (
    "a\u00a0b\u2009c\u3000d\u0085e\u2028f\u2029g\u200bh\ufeffi\n"
    "\v\f tab\tand  double  space\n \n  \n\n\n\t\n" + "x" + " " * 40 + "y\n" + "end with spaces   "
)
files["empty.txt"] = ""

for name, text in files.items():
    (HERE / name).write_bytes(text.encode("utf-8"))
# ~100 KB: the other files repeated, each copy tagged with a counter.
parts = [files[k] for k in sorted(files) if k != "empty.txt"]
out, size, i = [], 0, 0
while size < 100_000:
    chunk = f"[{i}] " + parts[i % len(parts)]
    out.append(chunk)
    size += len(chunk.encode("utf-8"))
    i += 1
(HERE / "mixed_100k.txt").write_bytes("".join(out).encode("utf-8"))
