// The sLSTM recurrence of xLSTM (Beck et al. 2024): scalar memory with exponential input gates,
// recurrent gate connections per head, stabilized in log space.
#pragma once

#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

// pre: [B, T, 4, H, D] (any layout: it is read once, through its strides), each gate's
// pre-activation from the input, gates in the order i, f, z, o; recurrent: [4, H, D, D], per
// gate and head the weights from h_{t-1} (out x in); bias: [4, H, D] or undefined (none). Per
// head, with r_g = recurrent[g, h] h_{t-1} (h_{-1} = c_{-1} = n_{-1} = 0):
//   i~, f~, z~, o~ = pre_t + bias + r,   m_t = max(log sigmoid(f~) + m_{t-1}, i~)   (m_0 = i~),
//   i = exp(i~ - m_t),  f = exp(log sigmoid(f~) + m_{t-1} - m_t),
//   c_t = f c_{t-1} + i tanh(z~),  n_t = f n_{t-1} + i,  h_t = sigmoid(o~) c_t / n_t.
// Returns h [B, T, H * D]. The stabilizer m scales c and n alike, so h does not depend on it
// and neither does any gradient (autograd's through m sums to zero; the fused backward
// omits it). On the CPU in float32 one autograd node with its own backward: per step one
// matrix product per head for the recurrent part and one fused pass over the gates, backward
// mirrored, the recurrent weights' gradient one product per head after the time loop.
// Elsewhere the reference below.
torch::Tensor INDUCT_SDK_API slstm_recurrence(const torch::Tensor& pre,
                                              const torch::Tensor& recurrent,
                                              const torch::Tensor& bias = {});

// The same as a loop of LibTorch tensor operations differentiated by autograd (any device,
// any floating type): NX-AI/xlstm's vanilla sLSTM cell.
torch::Tensor INDUCT_SDK_API slstm_recurrence_reference(const torch::Tensor& pre,
                                                        const torch::Tensor& recurrent,
                                                        const torch::Tensor& bias = {});

}  // namespace induct::nn
