#include "eval/oracle.h"

#include <fstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_file.h"
#include "core/sha256.h"
#include "generation/generate.h"
#include "runtime/session.h"

namespace tessera {

std::string ids_sha256(const std::vector<int32_t>& ids) {
  std::vector<uint8_t> bytes;
  bytes.reserve(ids.size() * 4);
  for (int32_t id : ids)
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(static_cast<uint32_t>(id) >> (8 * i)));
  return sha256_hex(bytes);
}

OracleCorpus load_oracle_corpus(const std::string& path) {
  const nlohmann::json j = read_json_file(path, "the oracle corpus");
  OracleCorpus c;
  if (!j.is_object() || !j.contains("prompts") || !j["prompts"].is_array() || j["prompts"].empty())
    fail(path, "prompts", "expected a non-empty list of prompts");
  for (const auto& p : j["prompts"]) {
    if (!p.is_string() || p.get<std::string>().empty()) fail(path, "prompts", "every prompt must be a non-empty string");
    c.prompts.push_back(p.get<std::string>());
  }
  if (j.contains("max_tokens")) {
    if (!j["max_tokens"].is_number_integer() || j["max_tokens"].get<int64_t>() < 1)
      fail(path, "max_tokens", "must be a positive integer");
    c.max_tokens = j["max_tokens"].get<int64_t>();
  }
  return c;
}

nlohmann::ordered_json run_oracle(const Model& model, const OracleCorpus& corpus) {
  const tok::Tokenizer& tok = model.require_tokenizer();
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  std::vector<int32_t> all;
  for (const std::string& prompt : corpus.prompts) {
    const std::vector<int32_t> ids = tok.encode(prompt, true);
    Session session(model);
    GenerateOptions o;
    o.max_tokens = corpus.max_tokens;
    o.ignore_eos = true;
    const GenerateResult r = generate(session, ids, o);
    all.insert(all.end(), r.ids.begin(), r.ids.end());
    results.push_back({{"prompt", prompt}, {"prompt_ids", ids}, {"ids", r.ids}, {"sha256", ids_sha256(r.ids)}});
  }
  nlohmann::ordered_json j;
  j["format"] = "tessera-oracle";
  j["version"] = 1;
  j["max_tokens"] = corpus.max_tokens;
  j["results"] = std::move(results);
  j["sha256"] = ids_sha256(all);
  return j;
}

OracleMismatch compare_oracle(const nlohmann::json& recorded, const nlohmann::json& fresh,
                              const std::string& recorded_file) {
  if (!recorded.is_object() || recorded.value("format", "") != "tessera-oracle" || !recorded.contains("results") ||
      !recorded["results"].is_array())
    fail(recorded_file, "", "not a Tessera oracle file");
  const auto& a = recorded["results"];
  const auto& b = fresh["results"];
  if (a.size() != b.size())
    return {false, fmt::format("{} prompts recorded, {} run", a.size(), b.size())};
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].value("prompt", "") != b[i]["prompt"].get<std::string>())
      return {false, fmt::format("prompt {} differs from the recorded corpus", i)};
    if (a[i]["prompt_ids"] != b[i]["prompt_ids"])
      return {false, fmt::format("prompt {}: the tokenizer gives different prompt ids", i)};
    const auto& x = a[i]["ids"];
    const auto& y = b[i]["ids"];
    for (size_t t = 0; t < std::max(x.size(), y.size()); ++t) {
      if (t >= x.size() || t >= y.size() || x[t] != y[t])
        return {false, fmt::format("prompt {} ({:?}): first divergence at generated token {}: recorded {}, got {}", i,
                                   b[i]["prompt"].get<std::string>().substr(0, 40), t,
                                   t < x.size() ? x[t].dump() : "nothing", t < y.size() ? y[t].dump() : "nothing")};
    }
  }
  return {};
}

}  // namespace tessera
