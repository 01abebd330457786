#!/bin/bash
# The real-GPU checks of issue 33, as one run on a machine with an NVIDIA GPU (and no package index):
#   bash scripts/gpu_checks.sh OUT_DIR
# Wheels for what the machine lacks may sit in .whl/ (installed into /tmp/site); the GPU's settings are never
# changed. Writes OUT_DIR/bench.log, gpu_probe.json, snapshot.json (bench/gpu_probe.py) and pytest_gpu.log.
set -o pipefail
out=${1:?usage: scripts/gpu_checks.sh OUT_DIR}
mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,pci.bus_id,clocks.sm,clocks.max.sm,power.limit,pcie.link.gen.max,pcie.link.width.max --format=csv 2>&1 | tee "$out/nvidia-smi.csv"
python3 -c "import cuda.bindings, pynvml, sqlalchemy; print('cuda-bindings', cuda.bindings.__version__)" || exit 1
timeout 200 python3 bench/gpu_probe.py --runs 10 --stress 10 --prolog-runs 20 --out "$out" 2>&1 | tee "$out/bench.log"
timeout 240 python3 -m pytest -m gpu -p no:cacheprovider -v -rs tests/test_gpu_real.py 2>&1 | tee "$out/pytest_gpu.log"
