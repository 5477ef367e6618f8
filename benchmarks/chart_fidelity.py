"""Does the drawn series keep its spike and its NaN? reportgen's reduction against TensorBoard's reservoir.

TensorBoard's server keeps 1,000 reservoir-sampled points per scalar tag (its default
`--samples_per_plugin scalars=1000`), so a single spike in a long run is usually not drawn.
reportgen's `downsample.reduce` keeps each bucket's minimum and maximum and every non-finite
point. This script puts one spike and one NaN at random steps of each series and counts, for
both, how often they survive, side by side on the same data, with the time each takes.

    pip install tensorboard          # only for the reference; reportgen does not use it
    python benchmarks/chart_fidelity.py                     # 10 series of 1,000,000 points
    python benchmarks/chart_fidelity.py --series 3 --points 200000
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from reportgen.render.downsample import DEFAULT_POINTS, reduce


def series(rng: np.random.Generator, length: int) -> tuple[np.ndarray, int, int]:
    """A noisy decreasing loss with one spike and one NaN at random positions."""
    steps = np.arange(length)
    values = 2.0 * np.exp(-3.0 * steps / length) + 0.5 + rng.normal(0.0, 0.02, length)
    spike, nan = (int(i) for i in rng.choice(length - 1, size=2, replace=False))  # not the last point
    values[spike] = values.max() * 5.0
    values[nan] = np.nan
    return values, spike, nan


def tensorboard_kept(values: np.ndarray, size: int, seed: int) -> tuple[set[int], float]:
    from tensorboard.backend.event_processing.reservoir import Reservoir

    reservoir = Reservoir(size=size, seed=seed)
    start = time.perf_counter()
    for step, value in enumerate(values.tolist()):
        reservoir.AddItem("loss", (step, value))
    kept = {step for step, _ in reservoir.Items("loss")}
    return kept, time.perf_counter() - start


def reportgen_kept(values: np.ndarray, points: int) -> tuple[set[int], float]:
    start = time.perf_counter()
    reduced = reduce(values, points)
    kept = set(reduced.kept.tolist()) | set(reduced.non_finite.tolist())
    return kept, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--series", type=int, default=10)
    parser.add_argument("--points", type=int, default=1_000_000, help="points per series")
    parser.add_argument("--reservoir", type=int, default=1000, help="TensorBoard's points per tag")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    results = {"tb": [], "rg": []}
    for index in range(args.series):
        values, spike, nan = series(rng, args.points)
        for name, (kept, seconds) in (("tb", tensorboard_kept(values, args.reservoir, args.seed + index)),
                                      ("rg", reportgen_kept(values, DEFAULT_POINTS))):
            results[name].append((len(kept), spike in kept, nan in kept, seconds))
    print(f"{args.points:,} points per series, {args.series} series, each with one spike and one NaN at random steps")
    print(f"{'method':34} {'points kept':>11} {'spike kept':>10} {'NaN kept':>9} {'s/series':>9} {'ratio':>6}")
    reference = statistics.median(r[3] for r in results["tb"])
    labels = {"tb": f"tensorboard Reservoir({args.reservoir})", "rg": f"reportgen reduce({DEFAULT_POINTS})"}
    for name in ("tb", "rg"):
        rows = results[name]
        seconds = statistics.median(r[3] for r in rows)
        print(f"{labels[name]:34} {statistics.median(r[0] for r in rows):>11,.0f} "
              f"{sum(r[1] for r in rows):>5}/{len(rows):<4} {sum(r[2] for r in rows):>4}/{len(rows):<4} "
              f"{seconds:>9.3f} {seconds / reference:>6.3f}")


if __name__ == "__main__":
    main()
