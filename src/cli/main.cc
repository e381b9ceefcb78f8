// tessera: the command-line front end. Every subcommand lives in its own
// file (cmd_*.cc) and registers itself here. Exit codes: 0 success, 1 a check
// failed (audit, oracle), 2 an error (bad input, bad usage).
#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"Tessera: on-device LLM inference runtime"};
  app.set_version_flag("--version", std::string("tessera ") + TESSERA_VERSION);
  app.require_subcommand(1);
  tessera::cli::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const tessera::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return tessera::cli::exit_code();
}
