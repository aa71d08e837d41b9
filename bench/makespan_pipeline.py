"""The makespan kernel's benchmark on real pipeline plans: random 8-stage splits of the pipeline chapter's 96-node
transformer profile, 1F1B with 32 micro-batches on 8 devices (the kernel's own `icml25nb bench makespan` uses random
stage times on the same DAG, so that the kernel package imports no chapter).

    .venv/bin/python bench/makespan_pipeline.py [small|default|full] > bench/makespan_pipeline.json
"""
import json
import sys

import numpy as np

from icml25nb.efficient import pipeline as PL
from icml25nb.kernels import makespan as MK


def pipeline_inputs(n_plans: int, n_stages: int = 8, n_micro: int = 32, seed: int = 1, public: bool = False) -> tuple:
    """(ptr, pred, slot, kind, dur, extra) of `n_plans` random splits of the 96-node transformer profile, 1F1B; with
    `public`, also (label, callable): the chapter's `evaluate_plans` on the same splits (the public function)."""
    prof = PL.synthetic_profile("transformer", n_nodes=96, seed=0)
    rng = np.random.default_rng(seed)
    splits = np.sort(np.stack([rng.choice(np.arange(1, prof.n), n_stages - 1, replace=False)
                               for _ in range(n_plans)]), 1)
    tpl = PL.schedule_template("1f1b", n_stages, n_stages, n_micro)
    dur, extra = PL.plan_weights(prof, splits, tpl, bandwidth=PL.DEFAULT_BANDWIDTH, latency=PL.DEFAULT_LATENCY)
    inputs = (tpl.ptr, tpl.pred, tpl.slot, tpl.kind, dur, extra)
    if public:
        return inputs, ("icml25nb.efficient.pipeline.evaluate_plans (plan weights + kernel + peak memory)",
                        lambda: PL.evaluate_plans(prof, splits, tpl))
    return inputs


if __name__ == "__main__":
    size = sys.argv[1] if len(sys.argv) > 1 else "default"
    n = {"small": 500, "default": 10_000, "full": 100_000}[size]
    inputs, public = pipeline_inputs(n, public=True)
    res = MK.benchmark(size, inputs=inputs, label="random splits of the pipeline chapter's transformer", public=public)
    print(json.dumps([res], indent=1))
