#include "cli/commands.h"

namespace tessera::cli {
namespace {
int g_exit_code = 0;
}  // namespace

int exit_code() { return g_exit_code; }
void set_exit_code(int code) { g_exit_code = code; }

void register_info(CLI::App& app);
void register_pull(CLI::App& app);
void register_tokenize(CLI::App& app);
void register_run(CLI::App& app);
void register_convert(CLI::App& app);
void register_oracle(CLI::App& app);
void register_quality(CLI::App& app);
void register_chat(CLI::App& app);
void register_audit(CLI::App& app);
void register_bench(CLI::App& app);
void register_perplexity(CLI::App& app);
#ifdef TESSERA_WITH_SERVER
void register_serve(CLI::App& app);
#endif

void register_commands(CLI::App& app) {
  register_info(app);
  register_pull(app);
  register_tokenize(app);
  register_run(app);
  register_convert(app);
  register_oracle(app);
  register_quality(app);
  register_chat(app);
  register_audit(app);
  register_bench(app);
  register_perplexity(app);
#ifdef TESSERA_WITH_SERVER
  register_serve(app);  // built unless -DTESSERA_BUILD_SERVER=OFF
#endif
}

}  // namespace tessera::cli
