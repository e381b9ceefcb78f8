#include "core/subprocess.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera {
namespace {

TEST(Subprocess, CapturesStdoutAndExitCode) {
  auto r = run_subprocess({"sh", "-c", "printf 'a b'; exit 3"}, ChildStdout::Capture);
  EXPECT_EQ(r.stdout_text, "a b");
  EXPECT_EQ(r.exit_code, 3);
}

TEST(Subprocess, PassesExtraEnvironmentAndArgumentsVerbatim) {
  auto r = run_subprocess({"sh", "-c", "printf '%s|%s' \"$TESSERA_T\" \"$1\"", "sh", "x; rm -rf /"},
                          ChildStdout::Capture, {{"TESSERA_T", "v 1"}});
  EXPECT_EQ(r.stdout_text, "v 1|x; rm -rf /");
}

TEST(Subprocess, MissingProgramIsAnError) {
  EXPECT_THROW(run_subprocess({"/nonexistent/tessera-no-such-program"}, ChildStdout::Capture),
               Error);
}

TEST(Subprocess, StdinIsClosed) {
  auto r = run_subprocess({"sh", "-c", "cat; echo done"}, ChildStdout::Capture);
  EXPECT_EQ(r.stdout_text, "done\n");
}

}  // namespace
}  // namespace tessera
