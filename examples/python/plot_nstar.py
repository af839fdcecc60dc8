"""N* against the maximum length L for every model of an nstar study, one line per model and
format (the paper's Figures 2-5), from a finished run:

    PYTHONPATH=python python3 examples/python/plot_nstar.py runs/quickstart nstar.png

Needs matplotlib (Debian: python3-matplotlib). Cells not learned at N_max are left out of the
lines and listed."""
import sys

import induct

folder, out = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "nstar.png"
r = induct.load(folder)
if r.nstar.empty:
    sys.exit(f"{folder}: no N* outcomes (run an nstar study into it)")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("matplotlib is not installed (Debian: apt install python3-matplotlib)")

fig, ax = plt.subplots(figsize=(6, 4))
for (model, fmt, distribution), cells in r.nstar.groupby(["model", "format", "distribution"]):
    learned = cells[cells.learned].sort_values("L")
    if learned.empty:
        print(f"not learned at any L: {model} {fmt} {distribution}")
        continue
    ax.plot(learned["L"], learned["nstar"], marker="o", label=f"{model} {fmt} {distribution}")
    for _, cell in cells[~cells.learned].iterrows():
        print(f"not learned: {model} {fmt} {distribution} L={cell['L']} (N_max {cell['n_max']})")
ax.set_yscale("log")
ax.set_xticks(sorted(r.nstar["L"].unique()))
ax.set_xlabel("maximum length L")
ax.set_ylabel("N* (sequences)")
ax.legend()
fig.tight_layout()
fig.savefig(out)
print(f"wrote {out}")
