"""Exhaustive search as a hyperopt algorithm: every point of a discrete space's grid, each exactly once.

hyperopt has no grid algorithm. This one reads each parameter's distribution node in the pyll graph
(``domain.params``), lists the values that node can draw, and hands out grid points that no trial in
``trials`` holds yet, so a resumed search never repeats a finished point.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Iterator, Mapping, Sequence

from hyperopt import Domain, Trials, pyll

class NotDiscreteError(ValueError):
    """A parameter whose distribution has no finite grid."""


def parameter_values(domain: Domain) -> dict[str, list[float]]:
    """For each label, the raw values (hyperopt's ``vals``: an index for choice) its node can draw."""
    values = {}
    for label, node in domain.params.items():
        given = {name: pyll.rec_eval(arg) for name, arg in node.arg.items() if name not in ("rng", "size")}
        arguments = {name: value for name, value in given.items() if value is not pyll.base.MissingArgument}
        values[label] = _node_values(label, node.name, arguments)
    return values


def _node_values(label: str, distribution: str, arguments: dict[str, Any]) -> list[float]:
    if distribution == "randint":  # choice is randint(len(options)); randint(low, high) draws low..high-1
        low, high = (0, arguments["low"]) if "high" not in arguments else (arguments["low"], arguments["high"])
        return list(range(low, high))
    if distribution == "categorical":  # pchoice
        return list(range(len(arguments["p"])))
    if distribution in ("quniform", "qloguniform"):
        # hyperopt draws round(x / q) * q for x uniform in (low, high) (exp(low), exp(high) for qloguniform):
        # step k comes out with non-zero probability when (k - 0.5, k + 0.5) overlaps (low / q, high / q).
        low, high, q = arguments["low"], arguments["high"], arguments["q"]
        if distribution == "qloguniform":
            low, high = math.exp(low), math.exp(high)
        first, last = math.floor(low / q - 0.5) + 1, math.ceil(high / q + 0.5) - 1
        return [float(step) * q for step in range(first, last + 1)]
    raise NotDiscreteError(
        f"{label!r} uses {distribution}, which has no finite grid; exhaustive search needs choice, pchoice, "
        f"randint, uniformint, quniform or qloguniform (or use --algo=random/tpe/anneal for continuous spaces)")


def grid_size(domain: Domain) -> int:
    return math.prod(len(values) for values in parameter_values(domain).values())


def _grid(domain: Domain) -> Iterator[dict[str, float]]:
    values = parameter_values(domain)
    labels = list(values)
    for point in itertools.product(*(values[label] for label in labels)):
        yield dict(zip(labels, point))


def _point_key(vals: Mapping[str, Sequence[float]]) -> tuple[tuple[str, float], ...]:
    # len(), not truthiness: a value list holding 0 (or a numpy array) must count as present
    return tuple(sorted((label, float(v[0])) for label, v in vals.items() if len(v)))


def suggest(new_ids: list[int], domain: Domain, trials: Trials, seed: int) -> list[dict[str, Any]]:
    """hyperopt's algorithm signature; returns fewer documents than ids (none) once the grid is used up."""
    taken = {_point_key(doc["misc"]["vals"]) for doc in trials.trials}
    docs: list[dict[str, Any]] = []
    fresh = (point for point in _grid(domain) if _point_key({k: [v] for k, v in point.items()}) not in taken)
    for tid, point in zip(new_ids, fresh):
        misc = {"tid": tid, "cmd": domain.cmd, "workdir": domain.workdir,
                "idxs": {label: [tid] for label in point}, "vals": {label: [value] for label, value in point.items()}}
        docs.extend(trials.new_trial_docs([tid], [None], [domain.new_result()], [misc]))
    return docs
