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


def pipeline_inputs(n_plans: int, n_stages: int = 8, n_micro: int = 32, seed: int = 1) -> tuple:
    "(ptr, pred, slot, kind, dur, extra) of `n_plans` random splits of the 96-node transformer profile, 1F1B."
    prof = PL.synthetic_profile("transformer", n_nodes=96, seed=0)
    rng = np.random.default_rng(seed)
    splits = np.sort(np.stack([rng.choice(np.arange(1, prof.n), n_stages - 1, replace=False)
                               for _ in range(n_plans)]), 1)
    tpl = PL.schedule_template("1f1b", n_stages, n_stages, n_micro)
    dur, extra = PL.plan_weights(prof, splits, tpl, bandwidth=PL.DEFAULT_BANDWIDTH, latency=PL.DEFAULT_LATENCY)
    return tpl.ptr, tpl.pred, tpl.slot, tpl.kind, dur, extra


if __name__ == "__main__":
    size = sys.argv[1] if len(sys.argv) > 1 else "default"
    n = {"small": 500, "default": 10_000, "full": 100_000}[size]
    res = MK.benchmark(size, inputs=pipeline_inputs(n), label="random splits of the pipeline chapter's transformer")
    print(json.dumps([res], indent=1))
