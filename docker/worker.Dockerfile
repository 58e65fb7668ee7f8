# A Prefect worker for kerneldojo's GPU stages: the CUDA toolkit (nvcc: the verifier compiles candidates), the
# CUDA build of torch, and kerneldojo with its `gpu` and `cluster` extras. Flow runs execute inside this container
# (a process worker), on the GPU the container was given. README "Running on a Prefect server with GPU workers".
#
#   docker build -f docker/worker.Dockerfile -t kerneldojo-worker .
#   docker run -d --gpus '"device=0"' --cap-add SYS_ADMIN --security-opt seccomp=unconfined \
#       --security-opt apparmor=unconfined -e PREFECT_API_URL=http://<prefect server>:4200/api \
#       -v /var/lib/kerneldojo:/var/lib/kerneldojo kerneldojo-worker --pool gpu-h200 --limit 1
#
# SYS_ADMIN and the unconfined profiles let the verifier build its sandboxes (user, mount, pid and net
# namespaces, its own seccomp filter, cgroups) inside the container; without them every candidate is refused
# rather than run unjailed (or set verifier.isolation=none for trusted code only).
ARG CUDA_IMAGE=nvidia/cuda:12.8.1-devel-ubuntu24.04
FROM ${CUDA_IMAGE}

# the CUDA build of torch matching the toolkit above; EXTRAS=cluster leaves vLLM and DeepSpeed out
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu128
ARG TORCH_SPEC=torch
ARG EXTRAS=gpu,cluster

ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 PYTHONUNBUFFERED=1
# python, a host compiler for the candidates' C++, libseccomp (the sandbox's filter), util-linux (unshare, setpriv)
RUN apt-get update && apt-get install -y --no-install-recommends \
        python3 python3-venv python3-dev g++ git ca-certificates libseccomp2 util-linux procps \
    && rm -rf /var/lib/apt/lists/*

ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH
RUN python3 -m venv $VIRTUAL_ENV && pip install --upgrade pip \
    && pip install --index-url ${TORCH_INDEX} "${TORCH_SPEC}"

# dependencies first (a code change does not reinstall them), then the checkout, installed in place: the
# deployments' pull step (flows.worker_steps.enter_code_dir) enters it
WORKDIR /opt/kerneldojo
COPY pyproject.toml README.md ./
RUN mkdir -p flows tasks operators verifier training schemas warehouse \
    && pip install --extra-index-url ${TORCH_INDEX} ".[${EXTRAS}]" && pip uninstall -y kerneldojo
COPY . .
RUN pip install --no-deps -e ".[${EXTRAS}]" && python -c "import torch, flows.worker_steps, verifier"

# one home for every worker of the pool (warehouse, MLflow store, checkpoints, build cache): mount it
ENV KERNELDOJO_CODE_DIR=/opt/kerneldojo KERNELDOJO_HOME=/var/lib/kerneldojo \
    DO_NOT_TRACK=1 PREFECT_SERVER_ANALYTICS_ENABLED=false TOKENIZERS_PARALLELISM=false
VOLUME /var/lib/kerneldojo

ENTRYPOINT ["prefect", "worker", "start"]
CMD ["--pool", "gpu-h200", "--limit", "1"]
