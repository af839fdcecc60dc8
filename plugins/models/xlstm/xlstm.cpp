// xLSTM (Beck et al. 2024), as NX-AI/xlstm's vanilla (PyTorch) backends compute it: a stack of
// mLSTM and sLSTM blocks, each pre-LayerNorm residual, a final LayerNorm and a linear head.
//   mLSTM block (matrix memory, parallel form): up-projection by 2 into x and z; x through a
//     depthwise causal convolution and SiLU gives q and k, x itself v (block-diagonal
//     projections of 4x4 blocks); per head C_t = f_t C_{t-1} + i_t v_t k_t^T / sqrt(d),
//     n_t = f_t n_{t-1} + i_t k_t / sqrt(d), h_t = C_t q_t / max(|n_t . q_t|, 1), with the
//     input gate exponential and the forget gate sigmoid (both from q, k, v), stabilized in
//     log space; a per-head LayerNorm, a learnable skip of the convolution's output, gated by
//     SiLU(z), projected down.
//   sLSTM block (scalar memory, recurrent gates): per head block-diagonal input and recurrent
//     weights; i and f read the convolved input, z and o the input;
//     c_t = f c_{t-1} + i tanh(z), n_t = f n_{t-1} + i, h_t = o c_t / n_t, i = exp(.) and
//     f = sigmoid(.) stabilized by m_t = max(log f + m_{t-1}, log i); a per-head LayerNorm;
//     then a gated GELU feed-forward block (pre-LayerNorm residual).
// The mLSTM's forget gate lies in (0, 1); the sLSTM's nonlinear recurrence is what lets xLSTM
// track states such as parity. The sLSTM recurrence is the SDK's (induct/nn/slstm.hpp: fused
// on the CPU, with its own backward); initialisation as the reference's (small_init, wang_init, the
// gates' biases, sLSTM's power-law forget-gate bias).
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <cmath>
#include <induct/model.hpp>
#include <induct/nn/conv.hpp>
#include <induct/nn/elementwise.hpp>
#include <induct/nn/linear.hpp>
#include <induct/nn/matmul.hpp>
#include <induct/nn/mlstm.hpp>
#include <induct/nn/slstm.hpp>
#include <induct/plugin.hpp>

#include "blocks/project.hpp"

namespace {

using induct::blocks::project;

struct Config {
  int64_t vocab = 0, d_model = 256, heads = 4, d_conv = 4, d_ff = 0;
  std::string blocks = "msms";
  int64_t inner() const { return 2 * d_model; }  // the mLSTM's up-projection
};

constexpr int64_t kQkvBlock = 4;  // the mLSTM's q, k, v projections: 4x4 blocks
constexpr double kNormEps = 1e-5;

torch::nn::Linear linear(int64_t in, int64_t out, bool bias = false) {
  return induct::blocks::linear(in, out, bias);
}

void small_init(torch::Tensor w, int64_t dim) { w.normal_(0.0, std::sqrt(2.0 / (5.0 * dim))); }
void wang_init(torch::Tensor w, int64_t dim, int64_t blocks) {
  w.normal_(0.0, 2.0 / static_cast<double>(blocks) / std::sqrt(static_cast<double>(dim)));
}

// LayerNorm with a weight and no bias over the last dimension.
torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& weight) {
  return induct::nn::layer_norm(x, weight, {}, kNormEps);
}

// A LayerNorm per head: [B, T, H*D] normalized over each head's D features.
torch::Tensor head_norm(const torch::Tensor& x, int64_t heads, const torch::Tensor& weight) {
  return induct::nn::head_norm(x, heads, weight, {}, kNormEps);
}

torch::nn::Conv1d depthwise(int64_t channels, int64_t kernel) {
  return torch::nn::Conv1d(
      torch::nn::Conv1dOptions(channels, channels, kernel).groups(channels).bias(true));
}

torch::Tensor causal_conv_silu(const torch::nn::Conv1d& conv, const torch::Tensor& x) {
  return induct::nn::causal_conv1d(x, conv->weight.squeeze(1), conv->bias, true);
}

class MBlock : public torch::nn::Module {
 public:
  MBlock(const Config& c, int64_t blocks) : c_(c) {
    const int64_t d = c.d_model, inner = c.inner(), H = c.heads;
    norm = register_parameter("norm", torch::ones({d}));
    up = register_module("up", linear(d, 2 * inner));
    conv = register_module("conv", depthwise(inner, c.d_conv));
    const int64_t projections = inner / kQkvBlock;
    q = register_parameter("q", torch::empty({projections, kQkvBlock, kQkvBlock}));
    k = register_parameter("k", torch::empty({projections, kQkvBlock, kQkvBlock}));
    v = register_parameter("v", torch::empty({projections, kQkvBlock, kQkvBlock}));
    igate = register_module("igate", linear(3 * inner, H, true));
    fgate = register_module("fgate", linear(3 * inner, H, true));
    out_norm = register_parameter("out_norm", torch::ones({inner}));
    skip = register_parameter("skip", torch::ones({inner}));
    down = register_module("down", linear(inner, d));
    torch::NoGradGuard no_grad;
    small_init(up->weight, d);
    for (auto* w : {&q, &k, &v}) small_init(*w, d);
    fgate->weight.zero_();
    fgate->bias.copy_(torch::linspace(3.0, 6.0, H));
    igate->weight.zero_();
    igate->bias.normal_(0.0, 0.1);
    wang_init(down->weight, d, blocks);
  }

  torch::Tensor forward(const torch::Tensor& input) {  // [B, T, d_model]
    const int64_t B = input.size(0), T = input.size(1), H = c_.heads, inner = c_.inner();
    // The up-projection's two halves as two products (contiguous outputs, no split).
    const auto normed = layer_norm(input, norm);
    const auto x = induct::nn::linear(normed, up->weight.narrow(0, 0, inner));
    const auto z = induct::nn::linear(normed, up->weight.narrow(0, inner, inner));
    const auto xc = causal_conv_silu(conv, x);
    const auto qt = induct::nn::block_diagonal_linear(xc, q),
               kt = induct::nn::block_diagonal_linear(xc, k),
               vt = induct::nn::block_diagonal_linear(x, v);
    const auto per_head = [&](const torch::Tensor& t) {  // [B, T, inner] -> [B, H, T, D]
      return t.reshape({B, T, H, inner / H}).transpose(1, 2);
    };
    // Both gates' pre-activations from [q, k, v] (3 inner features) as the sum of three
    // products with the gates' weights side by side (no concatenation of q, k and v; 2 H
    // outputs per product, where one gate's H = 4 leaves the product mostly overhead).
    const auto w = torch::cat({igate->weight, fgate->weight});  // [2 H, 3 inner]
    const auto pre =
        induct::nn::linear(qt, w.narrow(1, 0, inner), torch::cat({igate->bias, fgate->bias})) +
        induct::nn::linear(kt, w.narrow(1, inner, inner)) +
        induct::nn::linear(vt, w.narrow(1, 2 * inner, inner));  // [B, T, 2 H]
    const auto gates = pre.transpose(1, 2).unsqueeze(-1);       // [B, 2 H, T, 1]
    const auto i_pre = gates.narrow(1, 0, H), f_pre = gates.narrow(1, H, H);
    auto h = induct::nn::mlstm_parallel(per_head(qt), per_head(kt), per_head(vt), i_pre, f_pre);
    h = head_norm(h.transpose(1, 2).reshape({B, T, inner}), H, out_norm);
    h = induct::nn::swiglu(z, torch::addcmul(h, skip, xc));  // (h + skip xc) SiLU(z)
    return input + project(down, h);
  }

  torch::Tensor norm, q, k, v, out_norm, skip;
  torch::nn::Linear up{nullptr}, igate{nullptr}, fgate{nullptr}, down{nullptr};
  torch::nn::Conv1d conv{nullptr};

 private:
  Config c_;
};

class SBlock : public torch::nn::Module {
 public:
  // `index`: the block's place in the stack of `blocks` (the forget gate's bias depends on it).
  SBlock(const Config& c, int64_t index, int64_t blocks) : c_(c) {
    const int64_t d = c.d_model, H = c.heads, D = d / H;
    norm = register_parameter("norm", torch::ones({d}));
    conv = register_module("conv", depthwise(d, c.d_conv));
    gates = register_parameter("gates", torch::empty({4, H, D, D}));  // i, f, z, o
    recurrent = register_parameter("recurrent", torch::zeros({4, H, D, D}));
    bias = register_parameter("bias", torch::zeros({4, H, D}));
    out_norm = register_parameter("out_norm", torch::ones({d}));
    ffn_norm = register_parameter("ffn_norm", torch::ones({d}));
    up = register_module("up", linear(d, 2 * c.d_ff));
    down = register_module("down", linear(c.d_ff, d));
    torch::NoGradGuard no_grad;
    small_init(gates, d);
    const double ratio = blocks > 1 ? static_cast<double>(index) / (blocks - 1) : 0.0;
    const auto position = D > 1 ? torch::arange(D, torch::kFloat) / (D - 1) : torch::zeros({1});
    bias[1].copy_((-(-5.0 + 12.0 * position.pow(0.3 + 1.3 * ratio))).expand({H, D}));
    small_init(up->weight, d);
    wang_init(down->weight, d, blocks);
  }

  torch::Tensor forward(const torch::Tensor& input) {  // [B, T, d_model]
    const int64_t B = input.size(0), T = input.size(1), H = c_.heads, d = c_.d_model;
    const auto x = layer_norm(input, norm);
    const auto xc = causal_conv_silu(conv, x);
    // The input's part of each gate's pre-activation, [B, T, d] each.
    const auto i_x = induct::nn::block_diagonal_linear(xc, gates[0]),
               f_x = induct::nn::block_diagonal_linear(xc, gates[1]);
    const auto z_x = induct::nn::block_diagonal_linear(x, gates[2]),
               o_x = induct::nn::block_diagonal_linear(x, gates[3]);
    // Each gate's input part, [B, T, 4, H, D]; the recurrence (with the bias) is the SDK's.
    const auto pre = torch::stack({i_x, f_x, z_x, o_x}, 2).reshape({B, T, 4, H, d / H});
    const auto y = induct::nn::slstm_recurrence(pre, recurrent, bias);
    const auto h = input + head_norm(y, H, out_norm);
    // The gated GELU feed-forward: GELU(W_1 x) * (W_2 x), W_1 and W_2 the halves of `up`; the
    // GELU in the first product's node.
    const auto normed = layer_norm(h, ffn_norm);
    const auto gate = induct::nn::linear_gelu(normed, up->weight.narrow(0, 0, c_.d_ff), {}, true);
    const auto value = induct::nn::linear(normed, up->weight.narrow(0, c_.d_ff, c_.d_ff));
    return h + project(down, gate * value);
  }

  torch::Tensor norm, gates, recurrent, bias, out_norm, ffn_norm;
  torch::nn::Conv1d conv{nullptr};
  torch::nn::Linear up{nullptr}, down{nullptr};

 private:
  Config c_;
};

class XLstm final : public induct::SequenceModel {
 public:
  explicit XLstm(const Config& c) {
    const int64_t n = static_cast<int64_t>(c.blocks.size());
    embed_ = register_module("embed", torch::nn::Embedding(c.vocab, c.d_model));
    auto list = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < n; ++i) {
      if (c.blocks[i] == 'm') {
        auto block = std::make_shared<MBlock>(c, n);
        list->push_back(block);
        layers_.push_back([block](const torch::Tensor& x) { return block->forward(x); });
      } else {
        auto block = std::make_shared<SBlock>(c, i, n);
        list->push_back(block);
        layers_.push_back([block](const torch::Tensor& x) { return block->forward(x); });
      }
    }
    norm_ = register_parameter("norm", torch::ones({c.d_model}));
    head_ = register_module("head", linear(c.d_model, c.vocab));
    torch::NoGradGuard no_grad;
    small_init(embed_->weight, c.d_model);
    small_init(head_->weight, c.d_model);
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {  // [B, T] -> [B, T, V]
    auto x = hooks("embed", embed_(tokens));
    for (size_t i = 0; i < layers_.size(); ++i)
      x = hooks("block." + std::to_string(i), layers_[i](x));
    return project(head_, hooks("norm", layer_norm(x, norm_)));
  }

 private:
  torch::nn::Embedding embed_{nullptr};
  std::vector<std::function<torch::Tensor(const torch::Tensor&)>> layers_;
  torch::Tensor norm_;
  torch::nn::Linear head_{nullptr};
};

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  const auto& o = ctx.options;
  const long max = induct::kMaxModelDimension;
  Config c;
  c.vocab = ctx.vocab_size;
  c.blocks = o.get<std::string>("blocks", c.blocks);
  if (c.blocks.empty() || c.blocks.size() > 64 ||
      c.blocks.find_first_not_of("ms") != std::string::npos)
    o.fail("blocks", "must be 1 to 64 letters m (mLSTM) and s (sLSTM), e.g. msms");
  c.d_model = induct::get_in_range(o, "d_model", c.d_model, 1, max);
  c.heads = induct::get_in_range(o, "heads", c.heads, 1, max);
  c.d_conv = induct::get_in_range(o, "d_conv", c.d_conv, 1, 64);
  // The sLSTM block's feed-forward width: 4/3 d_model rounded up to a multiple of 64.
  const long d_ff = (4 * c.d_model / 3 + (4 * c.d_model % 3 != 0) + 63) / 64 * 64;
  c.d_ff = induct::get_in_range(o, "d_ff", d_ff, 1, max);
  if (c.d_model % c.heads != 0)
    o.fail("heads", "must divide d_model (" + std::to_string(c.d_model) + ")");
  if (c.inner() % kQkvBlock != 0 || (c.inner() / c.heads) * c.heads != c.inner())
    o.fail("d_model", "2 d_model must be a multiple of 4 (the mLSTM's projection blocks)");
  return std::make_unique<XLstm>(c);
}

void register_components(induct::Registrar& r) {
  r.add_model("xlstm",
              "xLSTM: mLSTM (matrix memory) and sLSTM (recurrent scalar memory) blocks "
              "(blocks=msms, d_model=256, heads=4, d_conv=4, d_ff=4/3 d_model rounded up to 64)",
              make);
}

}  // namespace

INDUCT_PLUGIN("xlstm", "1.2.0", register_components)
