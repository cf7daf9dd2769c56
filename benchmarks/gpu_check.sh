#!/usr/bin/env bash
# The first thing to run on a machine with a CUDA GPU (docs/testing.md, "On a GPU"): under 8 minutes on one GPU,
# from the repository root, offline. It prints
#   1. the machine: nvidia-smi, python, torch and its CUDA, the packages the GPU paths need (a missing one is named:
#      the tests that need it skip, saying so);
#   2. the GPU tests: pytest -m cuda over the files that hold them (fp16/bf16 training, CTranslate2 on CUDA against
#      generate, NF4/INT8 loading and QLoRA, SDPA/flash attention against eager, --gpu_id, sharded training), with
#      every skip's reason and the slowest durations;
#   3. the speed table: benchmarks/gpu_speed.py (training steps/s fp32, bf16, fp16; decoding sentences/s of
#      transformers and CTranslate2, greedy and beam), with ratios.
# Everything also goes to $OUT (or .gpu_check/ where OUT is unset): gpu_check.log, cuda_tests.xml, gpu_speed.json.
# Its exit status is the tests' (0: every cuda test passed or skipped with its reason), or the speed table's.
#
# Set-up, in a fresh environment as .ci/run builds one, with CUDA torch (PyPI's Linux x86_64 torch wheel is the
# CUDA build; the CPU build comes from the CPU index):
#   python3 -m venv .venv-gpu && .venv-gpu/bin/pip install torch==2.13.0 -e ".[test]"
#   PYTHON=.venv-gpu/bin/python benchmarks/gpu_check.sh        (--install-only: install the carried wheels, then stop)
# Without package registries (the workplace's device machine): PYTHON defaults to python3, whose image holds torch,
# transformers, accelerate and peft; wheels of the rest (benchmarks/gpu_wheels.sh fetches them into .whl/ and
# .whl-quantization/), where carried, are installed into $GPU_CHECK_SITE (default /tmp/site), which joins PYTHONPATH
# whenever it exists (an earlier call on the same machine may have filled it: docs/testing.md, "On a GPU").
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
RESULTS=${OUT:-$PWD/.gpu_check}
mkdir -p "$RESULTS"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
SITE=${GPU_CHECK_SITE:-/tmp/site}
for bundle in .whl .whl-quantization; do
    if ls "$bundle"/*.whl >/dev/null 2>&1; then
        if "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
                "$bundle"/*.whl; then
            touch "$SITE/.gpu_check"  # this script's folder: only such a one joins PYTHONPATH
        else
            echo "gpu_check: the wheels of $bundle/ did not install (the tests that need them skip)"
        fi
    fi
done
[ -f "$SITE/.gpu_check" ] && export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
if [ "${1:-}" = "--install-only" ]; then  # a first call that only installs the wheels it carries (docs/testing.md)
    echo "gpu_check: installed into $SITE:" && ls "$SITE"
    exit 0
fi

check() {
    echo "== 1. the machine"
    nvidia-smi || echo "nvidia-smi: not found (no NVIDIA driver here?)"
    "$PYTHON" - <<'EOF'
import importlib.metadata as metadata
import importlib.util
import sys

import torch

print(f"python {sys.version.split()[0]}; torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN "
      f"{torch.backends.cudnn.version()}; {torch.cuda.device_count()} device(s) visible: "
      + ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())))
for name, why in [("transformers", "models"), ("accelerate", "the Trainer's devices"), ("peft", "LoRA"),
                  ("datasets", "tokenised splits"), ("ctranslate2", "the CTranslate2 engine"),
                  ("bitsandbytes", "--quantization"), ("flash_attn", "flash attention 2 (optional)"),
                  ("deepspeed", "ZeRO (optional, 2 GPUs)")]:
    if importlib.util.find_spec(name) is None:
        print(f"  {name:<13} MISSING: {why} (its tests skip)")
        continue
    try:
        version = metadata.version(name.replace("_", "-"))
    except metadata.PackageNotFoundError:
        version = "?"
    extra = ""
    if name == "ctranslate2":
        import ctranslate2
        extra = f"; sees {ctranslate2.get_cuda_device_count()} CUDA device(s)"
    print(f"  {name:<13} {version}{extra}")
EOF
    echo
    echo "== 2. the GPU tests: pytest -m cuda"
    # Only the files that hold cuda tests are collected: quicker than the whole suite, and a module elsewhere that
    # imports a package missing here (ray, hyperopt, ...) cannot fail the check. --continue-on-collection-errors: nor
    # can one of these stop the others.
    local files
    mapfile -t files < <(grep -rlE "mark\.cuda" tests --include="test_*.py" | sort)
    echo "${#files[@]} files: ${files[*]}"
    timeout 330 "$PYTHON" -m pytest "${files[@]}" -m cuda -q -rs --durations=15 -p no:cacheprovider \
        --continue-on-collection-errors --junitxml="$RESULTS/cuda_tests.xml"
    local tests=$?
    [ $tests -eq 124 ] && echo "pytest -m cuda: stopped after 330 s"
    echo
    echo "== 3. the speed table"
    # shellcheck disable=SC2086  # GPU_SPEED_ARGS: options of gpu_speed.py, e.g. smaller sizes on a CPU
    timeout 150 "$PYTHON" benchmarks/gpu_speed.py --json "$RESULTS/gpu_speed.json" ${GPU_SPEED_ARGS:-}
    local speed=$?
    [ $speed -eq 124 ] && echo "benchmarks/gpu_speed.py: stopped after 150 s"
    echo
    echo "gpu_check: tests exit $tests, speed table exit $speed; results in $RESULTS"
    [ $tests -ne 0 ] && return $tests
    return $speed
}

check 2>&1 | tee "$RESULTS/gpu_check.log"
exit "${PIPESTATUS[0]}"
