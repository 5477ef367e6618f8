"""The checkpoint save interval (R12): Young (1974) and Daly (2006) from the observed save cost.

The interval balances the time spent saving against the work an interruption loses. With C the
cost of one save and M the mean time between interruptions:

    Young:  tau = sqrt(2 C M)
    Daly:   tau = sqrt(2 C M) * (1 + sqrt(C / 2M) / 3 + (C / 2M) / 9) - C,  for C < 2M;  tau = M otherwise

C is the median of the measured saves; M is observed (GPU time of the runs over the number of
interruptions) or, until one is observed, the plan's stated assumption. Where either is unknown
no interval is computed: the gap becomes an uncertainty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from reportgen.model import Evidence
from reportgen.numbers import median


@dataclass(frozen=True)
class SaveInterval:
    save_cost_s: float | None
    save_count: int
    mtbi_hours: float | None
    mtbi_basis: str
    interruptions: int
    observed_gpu_hours: float | None
    planned_minutes: float | None
    young_s: float | None = None
    daly_s: float | None = None
    uncertainties: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    # Why no interval came out although both C and M are known (non-finite figures); None otherwise.
    incomputable: str | None = None

    @property
    def recommended_minutes(self) -> float | None:
        """Young's interval, the guide's rule (R12); Daly's refinement is shown beside it."""
        return None if self.young_s is None else round(self.young_s / 60.0, 1)

    def _cost(self, interval_s: float) -> float | None:
        """Expected fraction of run time spent saving plus lost to interruptions at this interval."""
        if self.save_cost_s is None or self.mtbi_hours is None or interval_s <= 0:
            return None
        return sum(overhead(interval_s, self.save_cost_s, self.mtbi_hours * 3600.0))

    @property
    def best_overhead(self) -> float | None:
        """The time saving and lost work take at the recommended interval, as a fraction of run time."""
        return None if self.young_s is None else self._cost(self.young_s)

    @property
    def planned_overhead(self) -> float | None:
        """The same at the plan's interval."""
        return None if self.young_s is None or not self.planned_minutes else self._cost(self.planned_minutes * 60.0)

    @property
    def advice(self) -> str | None:
        """The interval in one plain sentence, with the figures behind it."""
        best, planned, minutes = self.best_overhead, self.planned_overhead, self.recommended_minutes
        if best is None or minutes is None or not math.isfinite(best):
            return None
        if planned is None or not math.isfinite(planned):
            return (f"Save every {minutes:g} min: saving and the work an interruption loses then take "
                    f"{best:.1%} of run time, the least any interval gives.")
        plan = f"{self.planned_minutes:g}-minute"
        if planned <= best * 1.01:
            return (f"Your {plan} interval is already within 1% of the best ({minutes:g} min): saving and lost work "
                    f"take {planned:.1%} of run time, against {best:.1%} at best. Keep it.")
        how = "saves more often than it needs to" if self.planned_minutes * 60.0 < self.young_s else \
            "saves too rarely: an interruption loses more work than saving would cost"
        return (f"Your {plan} interval {how}; saving and lost work take {planned:.1%} of run time, against "
                f"{best:.1%} when saving every {minutes:g} min.")

    @property
    def basis(self) -> str | None:
        if self.young_s is None or self.daly_s is None or self.save_cost_s is None or self.mtbi_hours is None:
            return None
        return (f"Young (1974) sqrt(2CM) with C = {self.save_cost_s:.1f} s (median of {self.save_count} measured saves) "
                f"and M = {self.mtbi_hours:.1f} h ({self.mtbi_basis}); Daly's (2006) refinement gives "
                f"{self.daly_s / 60.0:.1f} min")


def young(save_s: float, mtbi_s: float) -> float:
    """Young's first-order optimum interval between saves, in seconds."""
    return math.sqrt(2.0 * save_s * mtbi_s)


def daly(save_s: float, mtbi_s: float) -> float:
    """Daly's higher-order estimate of the optimum interval, in seconds (M itself when C >= 2M)."""
    if save_s >= 2.0 * mtbi_s:
        return mtbi_s
    ratio = save_s / (2.0 * mtbi_s)
    return young(save_s, mtbi_s) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - save_s


def overhead(interval_s: float, save_s: float, mtbi_s: float) -> tuple[float, float]:
    """Expected fractions of time spent saving (C / tau) and lost to interruptions (tau / 2M)."""
    return save_s / interval_s, interval_s / (2.0 * mtbi_s)


def save_interval(save_seconds: list[float], save_evidence: list[Evidence], interruptions: int,
                  gpu_hours: float | None, assumed_mtbi_hours: float | None, planned_minutes: float | None) -> SaveInterval:
    """The interval from what was measured, with every missing input said as an uncertainty."""
    usable = [s for s in save_seconds if math.isfinite(s) and s > 0]  # a save takes some time
    cost = median(usable)
    if gpu_hours is not None and not (math.isfinite(gpu_hours) and gpu_hours > 0):
        gpu_hours = None
    uncertainties = []
    if cost is None:
        uncertainties.append("The checkpoint save cost was never measured (no save with seconds was logged), "
                             "so no save interval is computed.")
    if interruptions and gpu_hours:
        mtbi: float | None = gpu_hours / interruptions
        basis = f"observed: {interruptions} interruption{'s' if interruptions != 1 else ''} in {gpu_hours:.1f} GPU h of runs"
        if assumed_mtbi_hours is not None:
            basis += f"; the plan assumed {assumed_mtbi_hours:g} h"
    elif assumed_mtbi_hours is not None:
        mtbi = assumed_mtbi_hours
        seen = f" in {gpu_hours:.1f} GPU h" if gpu_hours else ""
        basis = f"the plan's assumption; no interruption was observed{seen}"
    else:
        mtbi, basis = None, "unknown"
        seen = f"in {gpu_hours:.1f} GPU h" if gpu_hours else "in the logs"
        uncertainties.append(f"The mean time between interruptions is unknown: none was observed {seen} and the plan "
                             "states no assumption (checkpoints.mean_hours_between_interruptions).")
    young_s = daly_s = None
    incomputable = None
    if cost is not None and mtbi is not None:
        young_s, daly_s = young(cost, mtbi * 3600.0), daly(cost, mtbi * 3600.0)
        if not (math.isfinite(young_s) and math.isfinite(daly_s) and daly_s > 0):
            young_s = daly_s = None
            incomputable = f"The save interval cannot be computed from C = {cost:g} s and M = {mtbi:g} h."
            uncertainties.append(incomputable)
    return SaveInterval(cost, len(usable), mtbi, basis, interruptions, gpu_hours, planned_minutes, young_s, daly_s,
                        uncertainties=uncertainties, evidence=sorted(set(save_evidence)), incomputable=incomputable)
