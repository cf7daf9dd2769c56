#!/usr/bin/env bash
# Wheels for a GPU machine that cannot reach the package registries (the workplace's device machine: Python 3.12,
# x86-64, whose image already holds torch, transformers, accelerate, peft, pyarrow, pandas, xxhash, sacrebleu, ...),
# fetched here, where pip works: what a run needs beyond that image, in two folders that each fit one call's 64 MiB:
#   .whl/               ctranslate2 (the pipeline imports it first), datasets with dill and multiprocess, and the
#                       default metrics' rouge-score with nltk and defusedxml (~46 MB);
#   .whl-quantization/  bitsandbytes (~43 MB), for --quantization's tests.
# benchmarks/gpu_check.sh installs whichever of them is there into $GPU_CHECK_SITE (default /tmp/site) and puts it on
# PYTHONPATH; docs/testing.md ("On a GPU") gives the two calls that carry them.
#   benchmarks/gpu_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
fetch() {  # folder, then name==version ...
    local folder=$1
    shift
    mkdir -p "$folder"
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        "${PLATFORMS[@]}" -d "$folder" "$@"
}
# The versions the project's CPU environment runs (pip list there), so that both machines test the same code.
fetch .whl ctranslate2==4.8.5 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 nltk==3.10.4 defusedxml==0.7.1
python3 -m pip wheel -q --no-deps -w .whl rouge-score==0.1.2  # published as a source archive only (pure Python)
fetch .whl-quantization bitsandbytes==0.50.2
du -sh .whl .whl-quantization
