# XGrammar (github.com/mlc-ai/xgrammar, Apache-2.0): the structured-output
# engine behind vLLM, SGLang and TensorRT-LLM. Tessera uses its C++ library
# to turn JSON Schemas, GBNF grammars and regexes into per-step token masks
# (src/generation/output_constraint.cc).
#
# The source is XGrammar's own sdist on PyPI (its C++ sources and the two
# header-only dependencies it needs, picojson and dlpack), pinned by version
# and SHA-256 and fetched at configure time into the build directory
# (_deps/), then patched (cmake/xgrammar_patch.cmake). Offline:
# -DTESSERA_XGRAMMAR_URL=/path/to/xgrammar-0.2.9.tar.gz.
#
# Its CMakeLists is not used: it adds -Werror and -flto=auto to every
# compile and builds Python bindings. The library target is declared here
# from its sources instead, with this project's flags (and sanitizers).
include(FetchContent)
set(TESSERA_XGRAMMAR_URL
    "https://files.pythonhosted.org/packages/3a/2f/5bf8e8fa6619cff534932f79b0abc81a417d354bc5093252c1a6081d0a93/xgrammar-0.2.9.tar.gz"
    CACHE STRING "Where the XGrammar 0.2.9 source archive (its PyPI sdist) is fetched from")
FetchContent_Declare(xgrammar
  URL ${TESSERA_XGRAMMAR_URL}
  URL_HASH SHA256=87b466bca2475e29bb0323abc62c6c33cbcbcff47e5fb800a3e2099ac9620b90
  DOWNLOAD_EXTRACT_TIMESTAMP TRUE
  # One fix (raw control characters in length-bounded JSON strings): the
  # script says what and why.
  PATCH_COMMAND ${CMAKE_COMMAND} -P ${CMAKE_CURRENT_LIST_DIR}/xgrammar_patch.cmake
  # No CMakeLists there: FetchContent only downloads and unpacks.
  SOURCE_SUBDIR tessera-builds-its-own-target)
FetchContent_MakeAvailable(xgrammar)

# cpp/tvm_ffi holds the Python bindings; the rest is the library.
file(GLOB TESSERA_XGRAMMAR_SOURCES ${xgrammar_SOURCE_DIR}/cpp/*.cc ${xgrammar_SOURCE_DIR}/cpp/support/*.cc
     ${xgrammar_SOURCE_DIR}/cpp/converter_ext/*.cc)
add_library(tessera_xgrammar STATIC ${TESSERA_XGRAMMAR_SOURCES})
set_target_properties(tessera_xgrammar PROPERTIES CXX_STANDARD 17)
target_include_directories(tessera_xgrammar PUBLIC ${xgrammar_SOURCE_DIR}/include)
target_include_directories(tessera_xgrammar SYSTEM PUBLIC ${xgrammar_SOURCE_DIR}/3rdparty/picojson
                           ${xgrammar_SOURCE_DIR}/3rdparty/dlpack/include)
target_include_directories(tessera_xgrammar PRIVATE ${xgrammar_SOURCE_DIR}/cpp)
target_compile_definitions(tessera_xgrammar PUBLIC XGRAMMAR_ENABLE_CPPTRACE=0 XGRAMMAR_ENABLE_INTERNAL_CHECK=0)
# Third-party code: its warnings are its maintainers' to fix, and so is
# undefined behaviour UBSan might flag in it (the sanitized build aborts on
# the first report); AddressSanitizer still checks it.
target_compile_options(tessera_xgrammar PRIVATE -w)
if(TESSERA_SANITIZE)
  target_compile_options(tessera_xgrammar PRIVATE -fno-sanitize=undefined)
endif()
find_package(Threads REQUIRED)
target_link_libraries(tessera_xgrammar PUBLIC Threads::Threads)
