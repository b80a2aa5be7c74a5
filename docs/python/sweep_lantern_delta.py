"""LANTERN's TV budget delta against speed and acceptance on the default model, over seeds.

For each delta, every seed runs `ar` and `lantern` back to back (so drift in the machine's speed falls on both), and
the plot shows each delta's median speed-up over `ar` against its acceptance rate, with the seeds' spread.

    PYTHONPATH=build/python python3 docs/python/sweep_lantern_delta.py docs/python/lantern-delta.png
"""
import statistics
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt

import speculum

out = sys.argv[1] if len(sys.argv) > 1 else "lantern-delta.png"
engine = speculum.Engine(device="cpu", threads=1)  # the embedded default model
prompts = engine.info.example_prompts[:4] or ["a red star above a blue circle"]
deltas = [0.0, 0.05, 0.1, 0.2, 0.4]
seeds = range(4)

rows = []
for delta in deltas:
    speedups, accepted, drafted, taus = [], 0, 0, []
    for prompt in prompts:
        for seed in seeds:
            ar = engine.generate(prompt=prompt, seed=seed, method="ar")
            run = engine.generate(prompt=prompt, seed=seed, method="lantern", options={"delta": delta})
            speedups.append(ar.metrics["wall_ms"] / run.metrics["wall_ms"])
            accepted += run.metrics["accepted"]
            drafted += run.metrics["drafted"]
            taus.append(run.metrics["tau"])
    q1, median, q3 = statistics.quantiles(speedups, n=4)
    rows.append((delta, accepted / drafted, median, q1, q3, statistics.mean(taus)))
    print(f"delta {delta:<5} acceptance {accepted / drafted:.3f}  tau {statistics.mean(taus):.2f}  "
          f"speed-up over ar {median:.2f} [{q1:.2f}, {q3:.2f}]")

fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
ax.errorbar([r[1] for r in rows], [r[2] for r in rows],
            yerr=[[r[2] - r[3] for r in rows], [r[4] - r[2] for r in rows]], fmt="o-", capsize=3)
for delta, acceptance, median, *_ in rows:
    ax.annotate(f"δ={delta}", (acceptance, median), textcoords="offset points", xytext=(6, -10), fontsize=8)
ax.axhline(1.0, color="gray", lw=0.8, ls="--")
ax.set_xlabel("acceptance rate (accepted / drafted)")
ax.set_ylabel("speed-up over ar (median, quartiles)")
ax.set_title(f"LANTERN on {engine.info.name}: {len(prompts)} prompts x {len(seeds)} seeds, 1 thread", fontsize=9)
fig.tight_layout()
fig.savefig(out)
print("wrote", out)
