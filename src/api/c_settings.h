// The C API's tessera_generation_settings (include/tessera/tessera.h) and
// the one list of settings (include/tessera/generation_settings.hpp): the
// conversion, generated from the list, so that a setting the C struct lacks
// (or holds at another type or position) fails the build.
#pragma once

#include <tessera/generation_settings.hpp>
#include <tessera/tessera.h>

namespace tessera::api {

// Every field of `c` (a NULL string: that setting's default). Throws Error
// naming the setting for a NULL stop string or a NULL list with a count.
GenerationSettings settings_from_c(const tessera_generation_settings& c);

// Every setting at its default; its strings point at static storage.
const tessera_generation_settings& default_c_settings();

}  // namespace tessera::api
