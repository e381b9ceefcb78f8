# Run by cmake/xgrammar.cmake on XGrammar's unpacked source (cmake -P, in
# the source directory). One fix, to be proposed upstream:
#
#   JSON strings with minLength / maxLength: XGrammar 0.2.9 unrolls them over
#   a character class that excludes only '"', '\\', '\r' and '\n', so raw
#   control characters (U+0000-U+001F, which JSON requires escaped) are
#   accepted and JSON parsers then refuse the output. The default string rule
#   excludes them; this makes the bounded one do the same.
#
# Idempotent: a source already patched is left as it is.
set(file cpp/json_schema_converter.cc)
file(READ ${file} text)
set(bad [=[builder_.AddCharacterClass({{'"', '"'}, {'\\', '\\'}, {'\r', '\r'}, {'\n', '\n'}}, true);]=])
set(good [=[builder_.AddCharacterClass({{0, 0x1f}, {'"', '"'}, {'\\', '\\'}, {'\r', '\r'}, {'\n', '\n'}}, true);]=])
string(FIND "${text}" "${good}" already)
if(already GREATER -1)
  return()
endif()
string(FIND "${text}" "${bad}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "xgrammar_patch.cmake: the bounded-string character class is not where 0.2.9 has it")
endif()
string(REPLACE "${bad}" "${good}" text "${text}")
file(WRITE ${file} "${text}")
