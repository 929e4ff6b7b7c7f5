#!/usr/bin/env bash
# GPU smoke test of the Reef stack: up with a tiny guidance model, one training step, down.
#
# NOT part of CI: it needs a machine with at least one NVIDIA GPU, the GPU
# stack (SGLang, Slime, Megatron-LM, Ray, torch) installed in the environment
# that runs atoll, reef-infra, git-lfs, and a Reef source checkout in REEF_HOME
# (its recipes/tttd cookbook is not in the reef-infra wheel). It downloads the
# tiny model from the model hub on first use.
#
#   REEF_HOME=~/src/reef scripts/gpu_smoke.sh            # trainer on GPU 0
#   TRAINER_GPUS=0,1 REEF_HOME=~/src/reef scripts/gpu_smoke.sh
#
# What it does: renders serve.yaml from a tiny Guidance-TTT config (Qwen3-0.6B,
# G=2, R=2, one step, short sequences), starts the stack with `atoll stack up`
# (Reef + Slime/Megatron under Ray + SGLang), samples the 2x2 grid through Reef
# and reports a reward per rollout (`python -m atoll.guidance_ttt.gpu_smoke`), waits at
# the agent's training barrier until Reef shows the step trained AND the trainer's
# health passes the fail-closed gate (finite grad norm > 0, LoRA-B changed, no
# trainable base parameter, the step's global batch, checkpoint marker on disk;
# it needs atoll-guidance-ttt[ray]), then stops the stack. The stack is stopped on
# every exit path, Ctrl-C included. Logs: $WORK/stack/logs and $WORK/stack/reef-run.
set -euo pipefail

WORK="${WORK:-$(mktemp -d -t atoll-gpu-smoke.XXXXXX)}"
TRAINER_GPUS="${TRAINER_GPUS:-0}"
MODEL="${MODEL:-Qwen/Qwen3-0.6B}"
PORT="${PORT:-8911}"
DEADLINE_S="${DEADLINE_S:-1800}"
ATOLL="${ATOLL:-atoll}"
PYTHON="${PYTHON:-python}"

: "${REEF_HOME:?set REEF_HOME to a Reef source checkout (it holds recipes/tttd)}"
command -v nvidia-smi >/dev/null || { echo "gpu_smoke: no nvidia-smi; this needs a GPU machine" >&2; exit 2; }
# The token lives only in this process's environment and the stack's.
export REEF_TOKEN="${REEF_TOKEN:-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')}"
export REEF_HOME

n_gpus=$(awk -F, '{print NF}' <<<"$TRAINER_GPUS")
mkdir -p "$WORK"
cat >"$WORK/smoke.toml" <<TOML
guidance_model = "$MODEL"
groups = 2
rollouts = 2
steps = 1
max_guidance_tokens = 256
sequence_length = 2048
lora_rank = 32
tensor_parallel_size = 1
training = "on"
executor_preset = "openai"
executor_model = "unused-by-the-smoke"
state_dir = "$WORK/state"
reef_url = "http://127.0.0.1:$PORT"
TOML

stop() { "$ATOLL" stack down --stack-dir "$WORK/stack" || true; }
trap stop EXIT

echo "gpu_smoke: $n_gpus trainer GPU(s) ($TRAINER_GPUS), model $MODEL, work dir $WORK"
"$ATOLL" stack render --config "$WORK/smoke.toml" --check >"$WORK/serve.yaml"
start=$(date +%s)
REEF_URL=$("$ATOLL" stack up --config "$WORK/smoke.toml" --stack-dir "$WORK/stack" \
  --trainer-gpus "$TRAINER_GPUS" --executor-server off)
echo "gpu_smoke: stack healthy at $REEF_URL after $(($(date +%s) - start)) s"
"$ATOLL" stack status --stack-dir "$WORK/stack"
REEF_URL="$REEF_URL" "$PYTHON" -m atoll.guidance_ttt.gpu_smoke --config "$WORK/smoke.toml" --deadline "$DEADLINE_S"
echo "gpu_smoke: one step trained and passed the gate; total $(($(date +%s) - start)) s"
