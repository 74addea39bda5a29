"""The fitting engine: verified maxima of a well-posed objective for each candidate family.

Every family is fitted by maximising the multinomial likelihood of the sample grouped into
equal-count cells (:mod:`.binned`), from quartile-matched starts, by damped Newton with
L-BFGS-B where Newton cannot go (:mod:`.search`), and checked by perturbed restarts and
directional probes (:mod:`.engine`). Each fit carries a status (``ok``, ``boundary``, ``not
converged``, ``degenerate``), its objective and its AIC on the same likelihood. Nothing here
depends on a particular scipy or numpy release: the cdfs are closed forms over
``scipy.special``, and the optimisers are scipy's public ``minimize``.
"""

from __future__ import annotations

from ksptrace.studies.fits.binned import Binned, binned, equal_count_cells, negative_loglik
from ksptrace.studies.fits.engine import GUARANTEE_NATS, STATUSES, EngineFit, fit_family
from ksptrace.studies.fits.families import FAMILIES, Family, family

__all__ = ["FAMILIES", "GUARANTEE_NATS", "STATUSES", "Binned", "EngineFit", "Family", "binned",
           "equal_count_cells", "family", "fit_family", "negative_loglik"]
