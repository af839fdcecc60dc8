#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <vector>

#include "batch_chunks.hpp"
#include "induct/nn/matmul.hpp"
#include "simd_math.hpp"

namespace induct::nn {

namespace {

// Blocks of kSmall x kSmall (xLSTM's q, k and v projections) as one vectorised pass over the
// rows, each vector lane one block: as products, 128 sgemm calls of [rows, 4] x [4, 4] per
// projection, which read 4 numbers out of every 512 and cost more than the rest of the block.
constexpr int64_t kSmall = 4;

// W [H, 4, 4] as Wt[o][i][h] (contiguous over blocks, the vectorised dimension).
std::vector<float> by_lane(const float* w, int64_t H, bool transpose) {
  std::vector<float> t(kSmall * kSmall * H);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t o = 0; o < kSmall; ++o)
      for (int64_t i = 0; i < kSmall; ++i)
        t[(o * kSmall + i) * H + h] =
            transpose ? w[(h * kSmall + i) * kSmall + o] : w[(h * kSmall + o) * kSmall + i];
  return t;
}

// y[r, h, o] = sum_i Wt[o][i][h] x[r, h, i] for rows [begin, end); x, y [rows, H, 4].
INDUCT_SIMD_CLONES void small_blocks(int64_t begin, int64_t end, int64_t H, const float* Wt,
                                     const float* x, float* y) {
  for (int64_t r = begin; r < end; ++r) {
    const float* xr = x + r * H * kSmall;
    float* yr = y + r * H * kSmall;
#pragma omp simd
    for (int64_t h = 0; h < H; ++h) {
      const float x0 = xr[h * kSmall], x1 = xr[h * kSmall + 1], x2 = xr[h * kSmall + 2],
                  x3 = xr[h * kSmall + 3];
      for (int64_t o = 0; o < kSmall; ++o) {
        const float* w = Wt + o * kSmall * H + h;
        yr[h * kSmall + o] = w[0] * x0 + w[H] * x1 + w[2 * H] * x2 + w[3 * H] * x3;
      }
    }
  }
}

// g[o][i][h] += sum over rows [begin, end) of dy[r, h, o] x[r, h, i]: one pass over each row,
// its 16 products per block into 16 rows of partial sums.
INDUCT_SIMD_CLONES void small_blocks_weight_gradient(int64_t begin, int64_t end, int64_t H,
                                                     const float* dy, const float* x, float* g) {
  for (int64_t r = begin; r < end; ++r) {
    const float* xr = x + r * H * kSmall;
    const float* dr = dy + r * H * kSmall;
#pragma omp simd
    for (int64_t h = 0; h < H; ++h) {
      const float x0 = xr[h * kSmall], x1 = xr[h * kSmall + 1], x2 = xr[h * kSmall + 2],
                  x3 = xr[h * kSmall + 3];
      for (int64_t o = 0; o < kSmall; ++o) {
        const float d = dr[h * kSmall + o];
        float* go = g + o * kSmall * H + h;
        go[0] += d * x0;
        go[H] += d * x1;
        go[2 * H] += d * x2;
        go[3 * H] += d * x3;
      }
    }
  }
}

class SmallBlocks : public torch::autograd::Function<SmallBlocks> {
 public:
  // x2 [rows, H * 4] contiguous, weight [H, 4, 4] contiguous.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x2,
                            const at::Tensor& weight) {
    const int64_t rows = x2.size(0), H = weight.size(0);
    auto y = at::empty_like(x2);
    const auto Wt = by_lane(weight.data_ptr<float>(), H, false);
    at::parallel_for(0, rows, 64, [&](int64_t begin, int64_t end) {
      small_blocks(begin, end, H, Wt.data(), x2.data_ptr<float>(), y.data_ptr<float>());
    });
    ctx->save_for_backward({x2, weight});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x2 = saved[0], &weight = saved[1];
    const int64_t rows = x2.size(0), H = weight.size(0);
    const auto dy = grads[0].contiguous();
    at::Tensor dx, dw;
    if (ctx->needs_input_grad(0)) {  // dx[r, h, i] = sum_o W[h, o, i] dy[r, h, o]
      dx = at::empty_like(x2);
      const auto Wt = by_lane(weight.data_ptr<float>(), H, true);
      at::parallel_for(0, rows, 64, [&](int64_t begin, int64_t end) {
        small_blocks(begin, end, H, Wt.data(), dy.data_ptr<float>(), dx.data_ptr<float>());
      });
    }
    if (ctx->needs_input_grad(1)) {
      // One row of partial sums per chunk of rows (a split fixed by the thread count).
      const BatchChunks chunks(rows);
      std::vector<float> parts(chunks.count * kSmall * kSmall * H, 0.0f);
      chunks.run([&](int64_t c, int64_t begin, int64_t end) {
        small_blocks_weight_gradient(begin, end, H, dy.data_ptr<float>(), x2.data_ptr<float>(),
                                     parts.data() + c * kSmall * kSmall * H);
      });
      dw = at::empty_like(weight);
      float* out = dw.data_ptr<float>();
      for (int64_t h = 0; h < H; ++h)
        for (int64_t o = 0; o < kSmall; ++o)
          for (int64_t i = 0; i < kSmall; ++i) {
            float sum = 0;
            for (int64_t c = 0; c < chunks.count; ++c)
              sum += parts[(c * kSmall * kSmall + o * kSmall + i) * H + h];
            out[(h * kSmall + o) * kSmall + i] = sum;
          }
    }
    return {dx, dw};
  }
};

}  // namespace

torch::Tensor block_diagonal_linear(const torch::Tensor& x, const torch::Tensor& weight) {
  TORCH_CHECK(weight.dim() == 3 && x.dim() >= 1 && x.size(-1) == weight.size(0) * weight.size(2),
              "block_diagonal_linear: x [..., ", x.dim() ? x.size(-1) : 0,
              "] does not match weight ", weight.sizes(), " ([blocks, out, in])");
  const int64_t H = weight.size(0), out = weight.size(1), in = weight.size(2);
  auto sizes = x.sizes().vec();
  sizes.back() = H * out;
  if (in == kSmall && out == kSmall && x.device().is_cpu() && x.scalar_type() == at::kFloat &&
      weight.device().is_cpu() && weight.scalar_type() == at::kFloat)
    return SmallBlocks::apply(x.reshape({-1, H * in}).contiguous(), weight.contiguous())
        .view(sizes);
  // Each block of x read in place and the output written in x's order (batched_matmul).
  const auto by_block = x.reshape({-1, H, in}).transpose(0, 1);  // [H, rows, in]
  return batched_matmul(by_block, weight.transpose(-2, -1)).transpose(0, 1).reshape(sizes);
}

}  // namespace induct::nn
