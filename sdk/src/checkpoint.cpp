#include "induct/checkpoint.hpp"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace induct {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;

std::string shape_text(at::IntArrayRef shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

void flatten(const YAML::Node& node, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  for (const auto& entry : node) {
    const std::string key = prefix + entry.first.Scalar();
    if (entry.second.IsMap())
      flatten(entry.second, key + ".", out);
    else if (entry.second.IsScalar())
      out[key] = entry.second.Scalar();
  }
}

}  // namespace

std::map<std::string, torch::Tensor> read_safetensors(const std::string& path) {
  const auto fail = [&](const std::string& why) -> std::runtime_error {
    return std::runtime_error(path + ": " + why);
  };
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw fail("cannot read the file (" + ec.message() + ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw fail("cannot read the file");
  unsigned char length_bytes[8];
  if (size < 8 || !in.read(reinterpret_cast<char*>(length_bytes), 8))
    throw fail("not a safetensors file (" + std::to_string(size) + " bytes, no header length)");
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = header_length << 8 | length_bytes[i];
  if (header_length > kMaxHeaderBytes || header_length > size - 8)
    throw fail("not a safetensors file (a header of " + std::to_string(header_length) +
               " bytes in a file of " + std::to_string(size) + ")");
  std::string header(header_length, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(header_length)))
    throw fail("cannot read the header");
  YAML::Node root;
  try {
    root = YAML::Load(header);
  } catch (const YAML::Exception& e) {
    throw fail("the header is not JSON (" + e.msg + ")");
  }
  if (!root.IsMap()) throw fail("the header is not a JSON object of tensors");
  const uint64_t data_size = size - 8 - header_length;
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& entry : root) {
    const std::string name = entry.first.Scalar();
    if (name == "__metadata__") continue;
    const YAML::Node& info = entry.second;
    const auto bad = [&](const std::string& why) { return fail("tensor '" + name + "': " + why); };
    if (!info.IsMap() || !info["dtype"] || !info["shape"] || !info["data_offsets"] ||
        !info["shape"].IsSequence() || !info["data_offsets"].IsSequence() ||
        info["data_offsets"].size() != 2)
      throw bad("expected {dtype, shape, data_offsets: [begin, end]}");
    std::vector<int64_t> shape;
    uint64_t count = 1, begin = 0, end = 0;
    std::string dtype;
    try {
      dtype = info["dtype"].as<std::string>();
      for (const auto& d : info["shape"]) {
        const auto n = d.as<int64_t>();
        if (n < 0 || n > (int64_t{1} << 40)) throw bad("a dimension of " + std::to_string(n));
        shape.push_back(n);
        count *= static_cast<uint64_t>(n);
        if (count > (uint64_t{1} << 40)) throw bad("more than 2^40 values");
      }
      begin = info["data_offsets"][0].as<uint64_t>();
      end = info["data_offsets"][1].as<uint64_t>();
    } catch (const YAML::Exception&) {
      throw bad("a shape or offset that is not a non-negative integer");
    }
    torch::ScalarType type;
    uint64_t bytes;
    if (dtype == "F32")
      type = torch::kFloat, bytes = 4;
    else if (dtype == "F16")
      type = torch::kHalf, bytes = 2;
    else if (dtype == "BF16")
      type = torch::kBFloat16, bytes = 2;
    else
      throw bad("dtype " + dtype + " is not read (F32, F16 and BF16 are)");
    if (begin > end || end > data_size)
      throw bad("data offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                "] outside the " + std::to_string(data_size) + " bytes of data");
    if (end - begin != count * bytes)
      throw bad(std::to_string(end - begin) + " bytes for " + dtype + " of shape " +
                shape_text(shape) + " (" + std::to_string(count * bytes) + " expected)");
    torch::Tensor raw = torch::empty(shape, torch::TensorOptions().dtype(type));
    in.seekg(static_cast<std::streamoff>(8 + header_length + begin));
    if (count > 0 &&
        !in.read(static_cast<char*>(raw.data_ptr()), static_cast<std::streamsize>(end - begin)))
      throw bad("cannot read its data");
    tensors[name] = raw.to(torch::kFloat);
  }
  return tensors;
}

Checkpoint read_checkpoint(const std::string& folder) {
  namespace fs = std::filesystem;
  Checkpoint checkpoint;
  checkpoint.folder = folder;
  const std::string config = (fs::path(folder) / "config.json").string();
  const std::string weights = (fs::path(folder) / "model.safetensors").string();
  if (!fs::is_directory(folder)) throw std::runtime_error(folder + ": not a folder");
  for (const auto& file : {config, weights})
    if (!fs::exists(file))
      throw std::runtime_error(file +
                               ": no such file (a checkpoint folder holds config.json and "
                               "model.safetensors)");
  try {
    const YAML::Node root = YAML::LoadFile(config);
    if (!root.IsMap()) throw std::runtime_error(config + ": not a JSON object");
    flatten(root, "", checkpoint.config);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(config + ": not JSON (" + e.msg + ")");
  }
  checkpoint.tensors = read_safetensors(weights);
  return checkpoint;
}

namespace {

const std::string& config_value(const Checkpoint& c, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    auto found = c.config.find(key);
    if (found != c.config.end()) return found->second;
  }
  throw std::runtime_error(c.folder + "/config.json: no " + *keys.begin());
}

}  // namespace

long Checkpoint::integer(std::initializer_list<const char*> keys) const {
  const std::string& value = config_value(*this, keys);
  size_t used = 0;
  long result = 0;
  try {
    result = std::stol(value, &used);
  } catch (const std::exception&) {
  }
  if (used != value.size() || value.empty())
    throw std::runtime_error(folder + "/config.json: " + *keys.begin() +
                             ": expected an integer, got '" + value + "'");
  return result;
}

double Checkpoint::number(std::initializer_list<const char*> keys) const {
  const std::string& value = config_value(*this, keys);
  size_t used = 0;
  double result = 0;
  try {
    result = std::stod(value, &used);
  } catch (const std::exception&) {
  }
  if (used != value.size() || value.empty())
    throw std::runtime_error(folder + "/config.json: " + *keys.begin() +
                             ": expected a number, got '" + value + "'");
  return result;
}

std::string Checkpoint::text(std::initializer_list<const char*> keys) const {
  return config_value(*this, keys);
}

const torch::Tensor& Checkpoint::tensor(const std::string& name, at::IntArrayRef shape) const {
  auto found = tensors.find(name);
  if (found == tensors.end())
    throw std::runtime_error(folder + "/model.safetensors: no tensor '" + name + "'");
  if (found->second.sizes() != shape)
    throw std::runtime_error(folder + "/model.safetensors: tensor '" + name + "' has shape " +
                             shape_text(found->second.sizes()) + ", the model needs " +
                             shape_text(shape));
  return found->second;
}

std::pair<int64_t, std::string> block_of(const std::string& name, const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0) return {-1, ""};
  const size_t dot = name.find('.', prefix.size());
  const std::string number = name.substr(prefix.size(), dot - prefix.size());
  if (dot == std::string::npos || number.empty() ||
      number.find_first_not_of("0123456789") != std::string::npos || number.size() > 9)
    return {-1, ""};
  return {std::stol(number), name.substr(dot + 1)};
}

void load_parameters(torch::nn::Module& model, const Checkpoint& checkpoint,
                     const std::function<ParameterSource(const std::string& name)>& source,
                     int64_t freeze_layers) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) {
    const ParameterSource from = source(p.key());
    if (from.tensor.empty()) continue;
    const torch::Tensor& t = checkpoint.tensor(from.tensor, p.value().sizes());
    p.value().copy_(from.convert ? from.convert(t) : t);
    if (from.layer >= 0 && from.layer < freeze_layers) p.value().set_requires_grad(false);
  }
}

}  // namespace induct
