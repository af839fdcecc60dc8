// A model written in Python: a TorchScript file (torch.jit.save of a scripted nn.Module) run as
// a SequenceModel, with no Python at run time (docs/plugin-guide.md, "A model in Python").
//
// The module's contract:
//   forward(tokens: Tensor) -> Tensor                    [B, T] int64 -> logits [B, T, V]
//   @torch.jit.export
//   reset_parameters(vocab_size: int, max_length: int, seed: int) -> None
// The host seeds torch's generator with `seed` and calls reset_parameters (without autograd)
// each time it builds the model: it must size the tensors that depend on the vocabulary or the
// length and draw every parameter afresh. Every parameter is trained. Hook points: the module
// passes a layer's output through torch.ops.induct.hook(name, x) (examples/torchscript-model/
// induct_ops.py defines the operator for scripting); this library defines it for the host.
#include <torch/script.h>

#include <induct/model.hpp>
#include <induct/plugin.hpp>
#include <sstream>

namespace {

// The hooks of the model whose forward runs on this thread (a TorchScript forward runs its
// operators on the calling thread).
thread_local const induct::Hooks* current_hooks = nullptr;

torch::Tensor hook(const std::string& name, const torch::Tensor& x) {
  return current_hooks ? (*current_hooks)(name, x) : x;
}

TORCH_LIBRARY(induct, library) { library.def("hook(str name, Tensor x) -> Tensor", &hook); }

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

class TorchScriptModel final : public induct::SequenceModel {
 public:
  TorchScriptModel(torch::jit::Module module, const induct::ModelContext& ctx)
      : module_(std::move(module)) {
    // The module's tensors, under their own names, as this module's parameters and buffers (the
    // same tensors): the host's optimizer, checkpoints and device moves reach them.
    for (const auto& p : module_.named_parameters(true))
      owner(p.name).register_parameter(leaf(p.name), p.value, true);
    for (const auto& b : module_.named_buffers(true))
      owner(b.name).register_buffer(leaf(b.name), b.value);
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {
    const induct::Hooks* outer = current_hooks;
    current_hooks = &hooks;
    struct Restore {
      const induct::Hooks* outer;
      ~Restore() { current_hooks = outer; }
    } restore{outer};
    const c10::IValue out = module_.forward({tokens});
    if (!out.isTensor())
      throw std::runtime_error("forward returned a " + out.type()->str() +
                               ", not a Tensor of logits");
    return out.toTensor();
  }

  void train(bool on) override {
    induct::SequenceModel::train(on);
    module_.train(on);
  }

 private:
  static std::string leaf(const std::string& name) { return name.substr(name.rfind('.') + 1); }

  // The submodule of this module that mirrors the scripted module holding `name`.
  torch::nn::Module& owner(const std::string& name) {
    torch::nn::Module* at = this;
    size_t start = 0;
    for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', start)) {
      const std::string part = name.substr(start, dot - start);
      auto children = at->named_children();
      auto* found = children.find(part);
      at = found ? found->get()
                 : at->register_module(part, std::make_shared<torch::nn::Module>()).get();
      start = dot + 1;
    }
    return *at;
  }

  torch::jit::Module module_;
};

// The scripted module's reset_parameters, checked against the contract; fails on `file`.
void check_initialiser(const torch::jit::Module& module, const induct::Options& options) {
  const auto method = module.find_method("reset_parameters");
  const std::string wanted =
      "reset_parameters(self, vocab_size: int, max_length: int, seed: int) -> None";
  if (!method)
    options.fail("file", "the module has no method reset_parameters: define " + wanted +
                             " under @torch.jit.export; it sizes and draws every parameter, "
                             "once per seed");
  const auto& arguments = method->function().getSchema().arguments();
  bool ok = arguments.size() == 4;
  for (size_t i = 1; ok && i < arguments.size(); ++i)
    ok = arguments[i].type()->kind() == c10::TypeKind::IntType;
  if (!ok) {
    std::ostringstream schema;
    schema << method->function().getSchema();
    options.fail("file",
                 "reset_parameters has the signature " + schema.str() + "; expected " + wanted);
  }
}

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  const std::string file = ctx.options.get_file("file");
  torch::jit::Module module;
  try {
    module = torch::jit::load(file, ctx.device);
  } catch (const c10::Error& e) {
    // torch's first line, without its "[enforce fail at file:line] . " prefix and its advice to
    // upgrade PyTorch (the LibTorch here is what must read the file).
    std::string message = first_line(e.what_without_backtrace());
    if (message.rfind("[enforce fail", 0) == 0 && message.find("] . ") != std::string::npos)
      message = message.substr(message.find("] . ") + 4);
    message = message.substr(0, message.find(" The version of your PyTorch"));
    const bool version = message.find("version") != std::string::npos;
    ctx.options.fail(
        "file", version ? "written by a PyTorch whose TorchScript format this LibTorch " +
                              std::to_string(TORCH_VERSION_MAJOR) + "." +
                              std::to_string(TORCH_VERSION_MINOR) + " cannot read (" + message +
                              "): save it with a PyTorch no newer than the LibTorch induct was "
                              "built with, or build induct against a newer LibTorch"
                        : "not a TorchScript file (torch.jit.save of a scripted module "
                          "writes one): " +
                              message);
  }
  check_initialiser(module, ctx.options);
  // As saved: each parameter must be drawn anew, or every seed would train the same start.
  std::map<std::string, torch::Tensor> saved;
  for (const auto& p : module.named_parameters(true)) saved[p.name] = p.value.detach().clone();
  try {
    torch::NoGradGuard no_grad;
    module.run_method("reset_parameters", ctx.vocab_size, ctx.max_length,
                      static_cast<int64_t>(ctx.seed & 0x7fffffffffffffffULL));
  } catch (const std::exception& e) {
    // The interpreter's message (a torch::jit::JITException for a raise in the module), whose
    // last line says what failed.
    const auto* error = dynamic_cast<const c10::Error*>(&e);
    std::string message = error ? error->what_without_backtrace() : e.what();
    while (!message.empty() && message.back() == '\n') message.pop_back();
    ctx.options.fail("file", "reset_parameters(" + std::to_string(ctx.vocab_size) + ", " +
                                 std::to_string(ctx.max_length) +
                                 ", seed) failed: " + message.substr(message.rfind('\n') + 1));
  }
  for (const auto& p : module.named_parameters(true)) {
    const auto before = saved.find(p.name);
    if (before == saved.end() || p.value.numel() < 2 ||
        !before->second.sizes().equals(p.value.sizes()))
      continue;
    const auto& value = p.value;
    const bool constant = value.eq(value.flatten()[0]).all().item<bool>();
    if (!constant && value.equal(before->second.to(value.device())))
      ctx.options.fail("file", "reset_parameters left the parameter '" + p.name +
                                   "' as saved in the file: it must draw every parameter "
                                   "afresh, so that each seed starts from its own weights");
  }
  return std::make_unique<TorchScriptModel>(std::move(module), ctx);
}

void register_components(induct::Registrar& registrar) {
  registrar.add_model("torchscript",
                      "a scripted PyTorch module saved with torch.jit.save (options: file; "
                      "docs/plugin-guide.md)",
                      make);
}

}  // namespace

INDUCT_PLUGIN("torchscript", "1.0.0", register_components)
