#include "induct/nn/matmul.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <vector>

#include "gemm.hpp"

namespace induct::nn {

namespace {

// How the products read an operand [..., rows, cols] in place: each batch item a row-major
// matrix (or the transpose of one) at its own offset, rows `ld` elements apart. Per-head views
// such as x.view({B, T, H, D}).transpose(1, 2) and narrowed columns are read without a copy.
struct Layout {
  bool trans = false;            // the memory holds the transpose of each item
  int64_t ld = 0;                // leading dimension of the stored matrices
  std::vector<int64_t> offsets;  // of each batch item, in elements
};

// Whether a matrix of rows x cols with these strides is row-major with rows at least cols
// apart (a dimension of size 1 has any stride).
bool row_major(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  return (col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= cols);
}

// Whether sgemm can read x's items in place: each one row-major, or the transpose of one.
bool readable(const at::Tensor& x) {
  const int64_t r = x.size(-2), c = x.size(-1), sr = x.stride(-2), sc = x.stride(-1);
  return row_major(r, c, sr, sc) || row_major(c, r, sc, sr);
}

// x's layout (x readable).
Layout layout_of(const at::Tensor& x) {
  const int64_t r = x.size(-2), c = x.size(-1), sr = x.stride(-2), sc = x.stride(-1);
  Layout l;
  if (row_major(r, c, sr, sc)) {
    l.ld = r == 1 ? std::max<int64_t>(c, 1) : sr;
  } else {
    l.trans = true;
    l.ld = c == 1 ? std::max<int64_t>(r, 1) : sc;
  }
  // Offsets of the batch items, in the order of a contiguous [..., rows, cols] tensor.
  l.offsets.assign(1, x.storage_offset());
  for (int64_t d = 0; d + 2 < x.dim(); ++d) {
    std::vector<int64_t> next;
    next.reserve(l.offsets.size() * x.size(d));
    for (int64_t o : l.offsets)
      for (int64_t i = 0; i < x.size(d); ++i) next.push_back(o + i * x.stride(d));
    l.offsets = std::move(next);
  }
  return l;
}

// C_i = op(A_i) op(B_i) for every batch item i; op(A) [M, K], op(B) [K, N], C_i [M, N] with
// leading dimension ldc at its offset.
void products(const float* A, const Layout& a, bool ta, const float* B, const Layout& b, bool tb,
              float* C, const Layout& c, int64_t M, int64_t N, int64_t K) {
  for (size_t i = 0; i < c.offsets.size(); ++i)
    sgemm(ta, tb, M, N, K, 1, A + a.offsets[i], a.ld, B + b.offsets[i], b.ld, 0, C + c.offsets[i],
          c.ld);
}

// The base pointer of x's storage (offsets include the storage offset).
float* base(const at::Tensor& x) { return x.data_ptr<float>() - x.storage_offset(); }

// An empty gradient laid out as x when x is dense (every element of its memory one of its
// own): the products write it in place and views of it stay views back through x's parents.
at::Tensor gradient_like(const at::Tensor& x) {
  return x.is_non_overlapping_and_dense() ? at::empty_strided(x.sizes(), x.strides(), x.options())
                                          : at::empty(x.sizes(), x.options());
}

// The product's output [..., M, N], its batch and row dimensions in a's memory order when a is
// dense (per-head views give a per-head view of one [.., T, H, N] tensor, which the caller
// reshapes back without a copy), contiguous otherwise.
at::Tensor output_like(const at::Tensor& a, int64_t N) {
  auto sizes = a.sizes().vec();
  sizes.back() = N;
  const int64_t dims = a.dim();
  if (dims <= 2 || !a.is_non_overlapping_and_dense()) return at::empty(sizes, a.options());
  std::vector<int64_t> order(dims - 1);
  for (int64_t d = 0; d + 1 < dims; ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return a.stride(x) > a.stride(y); });
  order.push_back(dims - 1);
  std::vector<int64_t> stored(dims), back(dims);
  for (int64_t d = 0; d < dims; ++d) stored[d] = sizes[order[d]], back[order[d]] = d;
  return at::empty(stored, a.options()).permute(back);
}

class BatchedMatmul : public torch::autograd::Function<BatchedMatmul> {
 public:
  // a [..., M, K], b [..., K, N], each readable in place.
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& a, const torch::Tensor& b) {
    const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
    auto c = output_like(a, N);
    const Layout la = layout_of(a), lb = layout_of(b), lc = layout_of(c);
    products(base(a), la, la.trans, base(b), lb, lb.trans, base(c), lc, M, N, K);
    ctx->save_for_backward({a, b});
    return {c};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& a = saved[0];
    const auto& b = saved[1];
    const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
    auto dc = grads[0];
    if (!readable(dc)) dc = dc.contiguous();
    const Layout la = layout_of(a), lb = layout_of(b), lg = layout_of(dc);
    // da = dc op(B)^T [M, K] and db = op(A)^T dc [K, N], each written in its operand's layout
    // (as its transpose where the operand holds one: da^T = op(B) dc^T, db^T = dc^T op(A)).
    torch::Tensor da, db;
    if (ctx->needs_input_grad(0)) {
      da = gradient_like(a);
      const Layout ld = layout_of(da);
      if (ld.trans)
        products(base(b), lb, lb.trans, base(dc), lg, !lg.trans, base(da), ld, K, M, N);
      else
        products(base(dc), lg, lg.trans, base(b), lb, !lb.trans, base(da), ld, M, K, N);
    }
    if (ctx->needs_input_grad(1)) {
      db = gradient_like(b);
      const Layout ld = layout_of(db);
      if (ld.trans)
        products(base(dc), lg, !lg.trans, base(a), la, la.trans, base(db), ld, N, K, M);
      else
        products(base(a), la, !la.trans, base(dc), lg, lg.trans, base(db), ld, K, N, M);
    }
    return {da, db};
  }
};

}  // namespace

torch::Tensor batched_matmul(const torch::Tensor& a, const torch::Tensor& b) {
  TORCH_CHECK(a.dim() >= 2 && b.dim() >= 2 && a.size(-1) == b.size(-2), "batched_matmul: shapes ",
              a.sizes(), " and ", b.sizes(), " do not multiply");
  if (!(a.device().is_cpu() && a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat &&
        a.dim() == b.dim() && a.sizes().slice(0, a.dim() - 2) == b.sizes().slice(0, b.dim() - 2) &&
        a.numel() > 0 && b.numel() > 0))
    return torch::matmul(a, b);
  return BatchedMatmul::apply(readable(a) ? a : a.contiguous(),
                              readable(b) ? b : b.contiguous())[0];
}

}  // namespace induct::nn
