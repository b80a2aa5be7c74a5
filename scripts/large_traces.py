"""Traces that stay inside every documented limit (docs/limits.md) but are large, for the window's timing check
(scripts/window-large-traces.sh): each is a valid `ar` run on the default model's 16 x 16 grid, stretched along one
axis a hostile or buggy producer could stretch. A measuring aid, like scripts/trace_tokens.py.

  python3 scripts/large_traces.py OUT_DIR
"""
import json
import os
import sys

GRID = 16
CELLS = GRID * GRID
PARAMS = {"cfg": 1.5, "class_id": -1, "method": "ar", "method_options": {},
          "prompt": "a red circle on a gray background", "seed": 0, "temperature": 1.0, "top_k": 0, "top_p": 1.0}


def line(out, **event):
    out.write(json.dumps(event, separators=(",", ":")) + "\n")


def begin(out):
    line(out, type="RunBegin", method="ar", grid_rows=GRID, grid_cols=GRID, low_res_rows=0, low_res_cols=0,
         vocab_size=1024, params_json=json.dumps(PARAMS, separators=(",", ":")))


def step(out, index, passes_before, cells, passes=1):
    """One step committing `cells` (each token 7) with `passes` target forward passes."""
    line(out, type="StepBegin", step=index, phase="commit", fwd_passes_total=passes_before)
    if cells:
        line(out, type="Commit", step=index, cells=[list(c) for c in cells], tokens=[7] * len(cells),
             p_of_token=[0.5] * len(cells), entropy=[1.0] * len(cells), kv_begin=0, kv_end=len(cells))
    line(out, type="StepEnd", step=index, committed_cells=len(cells), fwd_passes_step=passes, accept_rate_step=1.0,
         forward_ms=1.0, wall_ms=1.0)


def end(out, tokens, nfe):
    line(out, type="RunEnd", cancelled=False, tokens=tokens, nfe=nfe, forward_ms=1.0, draft_ms=0.0, wall_ms=1.0)


def raster(n):
    return [(i // GRID, i % GRID) for i in range(n)]


def write(path, body):
    with open(path + ".partial", "w") as out:
        begin(out)
        body(out)
    os.replace(path + ".partial", path)


def main(folder):
    os.makedirs(folder, exist_ok=True)

    def normal(out):  # the reference: 256 steps of one token
        for i, cell in enumerate(raster(CELLS)):
            step(out, i, i, [cell])
        end(out, CELLS, CELLS)

    def many_passes(out):  # one step claims the most forward passes a step may (65,536)
        step(out, 0, 0, raster(CELLS), passes=1 << 16)
        end(out, CELLS, 1 << 16)

    def empty_steps(out):  # 250,000 steps that commit nothing, then the image in one step
        for i in range(250000):
            step(out, i, i, [])
        step(out, 250000, 250000, raster(CELLS))
        end(out, CELLS, 250001)

    def one_cell(out):  # 450,000 commits of cell (0, 0), 225 per step, then the rest of the image
        for i in range(2000):
            step(out, i, i, [(0, 0)] * 225)
        step(out, 2000, 2000, raster(CELLS))
        end(out, CELLS, 2001)

    def recommits(out):  # 20,000 steps each re-committing the same 16 cells (MuLo-style resampling, stretched)
        for i in range(20000):
            step(out, i, i, raster(16))
        step(out, 20000, 20000, raster(CELLS))
        end(out, CELLS, 20001)

    def draft_chain(out):  # one EAGLE-style Draft of the most nodes an event may carry (65,536), one chain deep
        n = 1 << 16
        line(out, type="StepBegin", step=0, phase="draft", fwd_passes_total=0)
        line(out, type="Draft", step=0, round=0, source="eagle", cells=[[0, 0]] * n, tokens=[1] * n,
             q_of_token=[0.5] * n, tree_parent=list(range(-1, n - 1)), tree_depth=list(range(1, n + 1)))
        line(out, type="StepEnd", step=0, committed_cells=0, fwd_passes_step=1, accept_rate_step=0.0, forward_ms=1.0,
             wall_ms=1.0)
        step(out, 1, 1, raster(CELLS))
        end(out, CELLS, 2)

    for name, body in [("normal", normal), ("draft-chain-65536", draft_chain), ("passes-65536", many_passes), ("empty-steps-250000", empty_steps),
                       ("one-cell-450000-commits", one_cell), ("recommits-20000-steps", recommits)]:
        write(os.path.join(folder, name + ".jsonl"), body)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
