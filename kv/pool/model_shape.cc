#include "kv/pool/model_shape.h"

#include <array>
#include <limits>
#include <nlohmann/json.hpp>

namespace kvx::kv {
namespace {

// Public model facts (WORKLOADS.md): bf16, vLLM block sizes.
const std::array<ModelShape, 4> kBuiltins{{
    {"llama3-8b", 32, 8, 128, 2, 16, false},
    {"qwen2.5-32b", 64, 4, 128, 2, 16, false},  // TP2: 4 of 8 KV heads per rank
    {"llama3-70b", 80, 1, 128, 2, 16, false},   // TP8: 1 of 8 KV heads per rank
    {"deepseek-v3", 61, 1, 576, 2, 64, true},   // MLA latent 512 + rope 64
}};

Result<std::uint32_t> readPositive(const nlohmann::json& object, const char* field,
                                   std::uint32_t fallback, bool required) {
  auto it = object.find(field);
  if (it == object.end()) {
    if (required) return invalidArgument(std::string("model shape: missing field '") + field + "'");
    return fallback;
  }
  if (!it->is_number_unsigned() || it->get<std::uint64_t>() == 0 ||
      it->get<std::uint64_t>() > 1'000'000) {
    // A container by its type only: dump() recurses, and deep nesting would overflow the stack.
    return invalidArgument(std::string("model shape: '") + field +
                           "' must be an integer in 1..1000000, got " +
                           (it->is_structured() ? std::string(it->type_name()) : it->dump()));
  }
  return static_cast<std::uint32_t>(it->get<std::uint64_t>());
}

}  // namespace

Status validateShape(const ModelShape& s) {
  const std::pair<const char*, std::uint32_t> fields[] = {{"layers", s.layers},
                                                          {"kvHeads", s.kvHeads},
                                                          {"headDim", s.headDim},
                                                          {"dtypeBytes", s.dtypeBytes},
                                                          {"tokensPerBlock", s.tokensPerBlock}};
  for (const auto& [field, value] : fields) {
    if (value == 0) {
      return invalidArgument("model shape '" + s.name + "': " + field + " must be positive");
    }
  }
  if (s.name.empty()) return invalidArgument("model shape needs a name");
  // One block of every layer, K and V: every size derived from a shape alone divides it.
  std::uint64_t blockBytes = 1;
  for (std::uint64_t factor :
       {s.kvHeads, s.headDim, s.dtypeBytes, s.tokensPerBlock, s.kvCount(), s.layers}) {
    if (blockBytes > std::numeric_limits<std::uint64_t>::max() / factor) {
      return invalidArgument(
          "model shape '" + s.name + "': a block of all layers does not fit in 64 bits (" +
          std::to_string(s.layers) + " layers x " + std::to_string(s.kvHeads) + " heads x " +
          std::to_string(s.headDim) + " x " + std::to_string(s.dtypeBytes) + " B x " +
          std::to_string(s.tokensPerBlock) + " tokens)");
    }
    blockBytes *= factor;
  }
  return Status::ok();
}

Result<ModelShape> builtinShape(std::string_view name) {
  for (const ModelShape& shape : kBuiltins) {
    if (shape.name == name) return shape;
  }
  std::string known;
  for (const std::string& n : builtinShapeNames()) known += (known.empty() ? "" : ", ") + n;
  return notFound("unknown model shape '" + std::string(name) + "' (built in: " + known +
                  "; or give a JSON shape)");
}

std::vector<std::string> builtinShapeNames() {
  std::vector<std::string> names;
  for (const ModelShape& shape : kBuiltins) names.push_back(shape.name);
  return names;
}

Result<ModelShape> shapeFromJson(std::string_view text) {
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, false);
  if (object.is_discarded() || !object.is_object()) {
    return invalidArgument("model shape: not a JSON object");
  }
  ModelShape shape;
  auto name = object.find("name");
  if (name == object.end() || !name->is_string() || name->get<std::string>().empty()) {
    return invalidArgument("model shape: 'name' must be a non-empty string");
  }
  shape.name = name->get<std::string>();
  KVX_ASSIGN_OR_RETURN(shape.layers, readPositive(object, "layers", 0, true));
  KVX_ASSIGN_OR_RETURN(shape.kvHeads, readPositive(object, "kvHeads", 0, true));
  KVX_ASSIGN_OR_RETURN(shape.headDim, readPositive(object, "headDim", 0, true));
  KVX_ASSIGN_OR_RETURN(shape.dtypeBytes, readPositive(object, "dtypeBytes", 2, false));
  KVX_ASSIGN_OR_RETURN(shape.tokensPerBlock, readPositive(object, "tokensPerBlock", 16, false));
  auto mla = object.find("mla");
  if (mla != object.end()) {
    if (!mla->is_boolean()) return invalidArgument("model shape: 'mla' must be true or false");
    shape.mla = mla->get<bool>();
  }
  KVX_RETURN_IF_ERROR(validateShape(shape));
  return shape;
}

std::string shapeToJson(const ModelShape& shape) {
  return nlohmann::json{{"name", shape.name},
                        {"layers", shape.layers},
                        {"kvHeads", shape.kvHeads},
                        {"headDim", shape.headDim},
                        {"dtypeBytes", shape.dtypeBytes},
                        {"tokensPerBlock", shape.tokensPerBlock},
                        {"mla", shape.mla}}
      .dump();
}

Result<ModelShape> shapeFromNameOrJson(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') return shapeFromJson(text);
  return builtinShape(text);
}

}  // namespace kvx::kv
