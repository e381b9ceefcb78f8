#include "state/session_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/byte_stream.h"
#include "core/error.h"
#include "core/sha256.h"

namespace tessera {

namespace {

constexpr char kSessionMagic[8] = {'T', 'S', 'E', 'S', 'S', 'I', 'O', 'N'};
constexpr size_t kDigestChars = 64;

struct Header {
  std::string identity, digest;
  uint64_t payload_bytes = 0;
};

// Magic, version, model identity, payload size and checksum; throws Error
// for a file that is not a session file of this version.
Header read_header(ByteReader& r, const std::string& path) {
  for (char c : kSessionMagic)
    if (r.get<char>() != c) fail(path, "session file", "is not a Tessera session file");
  if (const uint32_t v = r.get<uint32_t>(); v != kSessionFileVersion)
    fail(path, "session file", "has version {}; this Tessera reads version {}", v, kSessionFileVersion);
  Header h{std::string(kDigestChars, ' '), std::string(kDigestChars, ' ')};
  for (char& c : h.identity) c = r.get<char>();
  h.payload_bytes = r.get<uint64_t>();
  for (char& c : h.digest) c = r.get<char>();
  return h;
}

void check_model(const Header& h, const std::string& path, const std::string& model_identity) {
  if (h.identity != model_identity)
    fail(path, "session file", "was saved for another model ({}), not this one ({})", h.identity.substr(0, 12),
         model_identity.substr(0, 12));
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, "session file", "cannot be read");
  std::ostringstream all;
  all << f.rdbuf();
  return all.str();
}

}  // namespace

void write_session_file(const std::string& path, const std::string& model_identity,
                        std::span<const int32_t> history, const SequenceState& state) {
  ByteWriter payload;
  payload.put_vector(std::vector<int32_t>(history.begin(), history.end()));
  state.save(payload);
  const std::string& body = payload.bytes();
  const std::string digest =
      sha256_hex(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
  ByteWriter header;
  for (char c : kSessionMagic) header.put(c);
  header.put<uint32_t>(kSessionFileVersion);
  for (char c : model_identity) header.put(c);
  header.put<uint64_t>(body.size());
  for (char c : digest) header.put(c);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail(path, "session file", "cannot be written");
    f.write(header.bytes().data(), static_cast<std::streamsize>(header.bytes().size()));
    f.write(body.data(), static_cast<std::streamsize>(body.size()));
    if (!f) {
      f.close();
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      fail(path, "session file", "writing failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail(path, "session file", "cannot be renamed into place: {}", ec.message());
}

std::vector<int32_t> read_session_file(const std::string& path, const std::string& model_identity,
                                       SequenceState& state) {
  const std::string data = read_all(path);
  ByteReader r(data.data(), data.size(), path);
  const Header h = read_header(r, path);
  check_model(h, path, model_identity);
  if (h.payload_bytes != r.left())
    fail(path, "session file", "holds {} payload bytes, its header says {}", r.left(), h.payload_bytes);
  const char* body = data.data() + (data.size() - r.left());
  if (sha256_hex(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(body), h.payload_bytes)) != h.digest)
    fail(path, "session file", "is corrupted (its checksum does not match)");
  ByteReader p(body, h.payload_bytes, path);
  std::vector<int32_t> history = p.get_vector<int32_t>();
  SequenceState loaded = state;
  loaded.load(p);
  if (static_cast<int64_t>(history.size()) != loaded.length())
    fail(path, "session file", "holds {} tokens of history for {} positions", history.size(), loaded.length());
  if (p.left() != 0) fail(path, "session file", "has {} unexpected bytes at its end", p.left());
  state = std::move(loaded);
  return history;
}

SessionFileHead read_session_file_head(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, "session file", "cannot be read");
  constexpr size_t kHeaderBytes = sizeof(kSessionMagic) + 4 + kDigestChars + 8 + kDigestChars + 8;
  std::string head(kHeaderBytes, '\0');
  f.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(f.gcount()));
  ByteReader r(head.data(), head.size(), path);
  const Header h = read_header(r, path);
  const uint64_t tokens = r.get<uint64_t>();
  if (tokens > (h.payload_bytes - std::min<uint64_t>(h.payload_bytes, 8)) / sizeof(int32_t))
    fail(path, "session file", "says it holds {} tokens in a payload of {} bytes", tokens, h.payload_bytes);
  std::vector<int32_t> history(static_cast<size_t>(tokens));
  f.read(reinterpret_cast<char*>(history.data()), static_cast<std::streamsize>(tokens * sizeof(int32_t)));
  if (static_cast<uint64_t>(f.gcount()) != tokens * sizeof(int32_t))
    fail(path, "session file", "is truncated (its history runs past the end)");
  return {h.identity, std::move(history)};
}

}  // namespace tessera
