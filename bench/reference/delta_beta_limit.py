#!/usr/bin/env python3
# Run: /usr/bin/python3 bench/reference/delta_beta_limit.py (docs/models.md quotes its output).
# How far DeltaProduct's state leaves the permutation when beta = 2 sigmoid(logit) with the
# logit at +-z instead of exactly 0 or 2 (float64: the model's parameterisation, not rounding).
import torch, math
torch.manual_seed(0)
pairs=[(0,1),(1,2),(0,2)]
for z in (4.0, 6.0, 8.0, 10.0):
    hi, lo = 2*torch.sigmoid(torch.tensor(z,dtype=torch.float64)), 2*torch.sigmoid(torch.tensor(-z,dtype=torch.float64))
    worst={16:0,64:0,256:0}
    for trial in range(20):
        X=torch.eye(3,dtype=torch.float64); P=torch.eye(3,dtype=torch.float64)
        for t in range(1,257):
            for step in range(2):
                d=torch.randint(0,4,()).item()
                if d<3:
                    a,b=pairs[d]; k=torch.zeros(3,dtype=torch.float64); k[a]=1/math.sqrt(2); k[b]=-1/math.sqrt(2); beta=hi
                    R=torch.eye(3,dtype=torch.float64)-2*torch.outer(k,k)
                else:
                    k=torch.tensor([1.0,0,0],dtype=torch.float64); beta=lo; R=torch.eye(3,dtype=torch.float64)
                X=(torch.eye(3,dtype=torch.float64)-beta*torch.outer(k,k))@X; P=R@P
            if t in worst: worst[t]=max(worst[t],(X-P).abs().max().item())
    print(f"logit +-{z:g}: beta {hi.item():.6f} / {lo.item():.2e}; max |X - P| after 16/64/256 tokens: {worst[16]:.3g} / {worst[64]:.3g} / {worst[256]:.3g}")
