// Registration of the CLI subcommands; one cmd_*.cc file per subcommand.
#pragma once

#include <CLI/CLI.hpp>

namespace tessera::cli {

void register_commands(CLI::App& app);

// The process exit code a subcommand asked for (0 unless it set one).
int exit_code();
void set_exit_code(int code);

}  // namespace tessera::cli
