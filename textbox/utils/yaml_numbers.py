"""Reading yaml as people write it: ``learning_rate: 3e-5`` is a number.

PyYAML follows YAML 1.1, where a float needs a dot (``3.0e-5``): ``3e-5`` would be read as the string '3e-5' and
refused as a learning rate. TextBox 2.0's own files, and most people's, write it that way, so every yaml layer is
read with this loader: YAML 1.2's float forms (with or without a dot, with an exponent) resolve to floats; nothing
else changes. Standard library and PyYAML only (utils is the lowest layer).
"""
from __future__ import annotations

import re
from typing import Any

import yaml


class NumberLoader(yaml.SafeLoader):
    """yaml.SafeLoader whose implicit floats are YAML 1.2's: 3e-5, 1E3, .5, 1.5e+3, -2.0 (and inf/nan)."""


# A copy of SafeLoader's resolvers, the float one replaced (add_implicit_resolver would only append a second).
NumberLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:float"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
NumberLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                   |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                   |[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                   |[-+]?\.(?:inf|Inf|INF)
                   |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."))


def load(text: str) -> Any:
    """The value of a yaml document, with YAML 1.2 floats (raises yaml.YAMLError as yaml.safe_load does)."""
    return yaml.load(text, Loader=NumberLoader)  # noqa: S506 - a SafeLoader subclass: no arbitrary objects
