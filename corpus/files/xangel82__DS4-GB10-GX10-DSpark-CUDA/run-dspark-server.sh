#!/usr/bin/env bash
# GB10/GX10 DSpark CUDA modifications:
# Copyright (c) 2026 Marco Palaferri. Licensed under the MIT License.
set -euo pipefail

MODEL="${DS4_MODEL:-/home/athena/ds4/ds4flash.gguf}"
DSPARK="${DS4_DSPARK_MODEL:-/home/athena/ds4/DeepSeek-V4-Flash-DSpark-Q4K-Q8.gguf}"
KV_DIR="${DS4_EXPERIMENT_KV_DIR:-/tmp/ds4-gb10-dspark-kv}"
CTX="${DS4_CTX:-262144}"
MAX_TOKENS="${DS4_MAX_TOKENS:-2200}"
THREADS="${DS4_THREADS:-10}"
PORT="${DS4_PORT:-30007}"
KV_DISK_SPACE_MB="${DS4_KV_DISK_SPACE_MB:-16384}"
DRAFT="${DS4_DSPARK_DRAFT:-5}"
TELEMETRY="${DS4_TELEMETRY:-0}"
STREAM_HEARTBEAT_SEC="${DS4_STREAM_HEARTBEAT_SEC:-140}"
PREFILL_POLICY="${DS4_KV_PREFILL_CHECKPOINT_POLICY:-canonical-only}"
MEMORY_PROFILE="${DS4_MEMORY_PROFILE:-balanced}"
PREFILL_CHUNK="${DS4_PREFILL_CHUNK:-}"
KV_COLD_MAX_TOKENS="${DS4_KV_CACHE_COLD_MAX_TOKENS:-$CTX}"
ADVERTISE_CONTEXT_PCT="${DS4_ADVERTISE_CONTEXT_PCT:-85}"
LONG_ANCHOR_MIN_TOKENS="${DS4_KV_LONG_COLD_ANCHOR_MIN_TOKENS:-$((CTX / 2))}"
LONG_ANCHOR_TRIM_TOKENS="${DS4_KV_LONG_COLD_ANCHOR_TRIM_TOKENS:-$((CTX / 16))}"
CONFIDENCE_POST_NORM="${DS4_DSPARK_CONFIDENCE_POST_NORM:-0}"
GRAPH_TOPOLOGY_CACHE_DISABLE="${DS4_CUDA_DSPARK_GRAPH_TOPOLOGY_CACHE_DISABLE:-0}"
SECONDARY_COPY_PIPELINED="${DS4_CUDA_SECONDARY_COPY_PIPELINED:-1}"

if [[ ! -f "$MODEL" ]]; then
  echo "Main model not found: $MODEL" >&2
  exit 2
fi
if [[ ! -f "$DSPARK" ]]; then
  echo "DSpark sidecar not found: $DSPARK" >&2
  echo "Build it with: ./build-dspark-sidecar.sh" >&2
  exit 2
fi
mkdir -p "$KV_DIR"

case "$PREFILL_POLICY" in
  canonical-only|coalesced|legacy) ;;
  *) echo "Invalid DS4_KV_PREFILL_CHECKPOINT_POLICY: $PREFILL_POLICY" >&2; exit 2 ;;
esac
case "$CONFIDENCE_POST_NORM" in
  0|1) ;;
  *) echo "Invalid DS4_DSPARK_CONFIDENCE_POST_NORM: $CONFIDENCE_POST_NORM (expected 0 or 1)" >&2; exit 2 ;;
esac
case "$GRAPH_TOPOLOGY_CACHE_DISABLE" in
  0|1) ;;
  *) echo "Invalid DS4_CUDA_DSPARK_GRAPH_TOPOLOGY_CACHE_DISABLE: $GRAPH_TOPOLOGY_CACHE_DISABLE (expected 0 or 1)" >&2; exit 2 ;;
esac
case "$SECONDARY_COPY_PIPELINED" in
  0|1) ;;
  *) echo "Invalid DS4_CUDA_SECONDARY_COPY_PIPELINED: $SECONDARY_COPY_PIPELINED (expected 0 or 1)" >&2; exit 2 ;;
esac

export DS4_CUDA_COPY_MODEL=1
export DS4_CUDA_SECONDARY_COPY_PIPELINED="$SECONDARY_COPY_PIPELINED"
export DS4_CUDA_WEIGHT_CACHE_LIMIT_GB="${DS4_CUDA_WEIGHT_CACHE_LIMIT_GB:-112}"
if [[ "${DS4_CUDA_DROP_COPIED_MODEL_PAGES:-1}" == "1" ]]; then
  export DS4_CUDA_DROP_COPIED_MODEL_PAGES=1
  unset DS4_CUDA_KEEP_MODEL_PAGES
else
  export DS4_CUDA_KEEP_MODEL_PAGES=1
fi
# The GB10 has enough unified-memory headroom for the measured 80.8 GiB target,
# 10.7 GiB sidecar, context buffers and a 12 GiB hot Q8->F16 cache.  Keeping the
# hot projections resident avoids the 6 GiB cache ceiling seen in early runs.
case "$MEMORY_PROFILE" in
  balanced)
    export DS4_CUDA_Q8_F16_CACHE_MB="${DS4_CUDA_Q8_F16_CACHE_MB:-12288}"
    export DS4_CUDA_COPY_SECONDARY_MODEL="${DS4_CUDA_COPY_SECONDARY_MODEL:-1}"
    unset DS4_CUDA_DSPARK_CACHE_COMPACT
    if [[ "$PREFILL_CHUNK" == "" ]]; then
      PREFILL_CHUNK=8192
    fi
    ;;
  prefill-fast)
    export DS4_CUDA_Q8_F16_CACHE_MB="${DS4_CUDA_Q8_F16_CACHE_MB:-12288}"
    export DS4_CUDA_COPY_SECONDARY_MODEL="${DS4_CUDA_COPY_SECONDARY_MODEL:-0}"
    unset DS4_CUDA_DSPARK_CACHE_COMPACT
    if [[ "$PREFILL_CHUNK" == "" ]]; then
      PREFILL_CHUNK=4096
    fi
    ;;
  lean)
    export DS4_CUDA_Q8_F16_CACHE_MB="${DS4_CUDA_Q8_F16_CACHE_MB:-11264}"
    export DS4_CUDA_COPY_SECONDARY_MODEL="${DS4_CUDA_COPY_SECONDARY_MODEL:-1}"
    export DS4_CUDA_DSPARK_CACHE_COMPACT="${DS4_CUDA_DSPARK_CACHE_COMPACT:-1}"
    if [[ "$PREFILL_CHUNK" == "" ]]; then
      PREFILL_CHUNK=4096
    fi
    ;;
  *)
    echo "Invalid DS4_MEMORY_PROFILE: $MEMORY_PROFILE (expected balanced, prefill-fast or lean)" >&2
    exit 2
    ;;
esac
export DS4_CUDA_DSPARK_CACHE_PRIORITY=1
export DS4_CUDA_DEFER_END_SYNC=1
export DS4_METAL_GRAPH_TOKEN_SPLIT_LAYERS=0
export DS4_CUDA_FUSED_COMPRESSOR_UPDATE=1
export DS4_CUDA_TOKEN_GRAPH=1
export DS4_CUDA_DSPARK_GRAPH=1
export DS4_CUDA_COALESCED_F16_MATMUL=1
export DS4_CUDA_Q8_U16_LOADS=1
export DS4_STREAM_HEARTBEAT_SEC="$STREAM_HEARTBEAT_SEC"
# Long retries must find the exact full-prompt checkpoint even when the prompt
# exceeds cold_max_tokens.  canonical-only writes no intermediate frontiers.
export DS4_KV_KEEP_LONG_TEXT_HITS="${DS4_KV_KEEP_LONG_TEXT_HITS:-1}"
export DS4_KV_PREFILL_CHECKPOINT_POLICY="$PREFILL_POLICY"
export DS4_KV_CANONICAL_LONG_PREFILL="${DS4_KV_CANONICAL_LONG_PREFILL:-1}"
export DS4_KV_CANONICAL_PREFILL_MIN_SEC="${DS4_KV_CANONICAL_PREFILL_MIN_SEC:-30}"
export DS4_KV_LONG_COLD_ANCHOR_MIN_TOKENS="$LONG_ANCHOR_MIN_TOKENS"
export DS4_KV_LONG_COLD_ANCHOR_TRIM_TOKENS="$LONG_ANCHOR_TRIM_TOKENS"
if [[ "${DS4_PREFILL_FINAL_LOGITS_ONLY:-}" != "" ]]; then
  export DS4_PREFILL_FINAL_LOGITS_ONLY
elif [[ "$PREFILL_POLICY" == "canonical-only" ]]; then
  export DS4_PREFILL_FINAL_LOGITS_ONLY=1
else
  unset DS4_PREFILL_FINAL_LOGITS_ONLY
fi
if [[ "${DS4_CUDA_DSPARK_TENSOR_CORES:-1}" == "1" ]]; then
  export DS4_CUDA_DSPARK_TENSOR_CORES=1
  export DS4_CUDA_DSPARK_TC_PAD_N="${DS4_CUDA_DSPARK_TC_PAD_N:-8}"
else
  unset DS4_CUDA_DSPARK_TENSOR_CORES
fi
if [[ "${DS4_CUDA_DSPARK_TENSOR_CORES_Q8:-1}" == "1" ]]; then
  export DS4_CUDA_DSPARK_TENSOR_CORES_Q8=1
else
  unset DS4_CUDA_DSPARK_TENSOR_CORES_Q8
fi
# Athena serves one active decode stream, so never stop collecting DSpark
# confidence/K telemetry because of a stale historical estimate.  K remains
# adaptive after the draft; only the pre-draft performance bypass is removed.
if [[ "${DS4_DSPARK_ALWAYS_DRAFT:-1}" == "1" ]]; then
  export DS4_DSPARK_ALWAYS_DRAFT=1
else
  unset DS4_DSPARK_ALWAYS_DRAFT
fi
if [[ "${DS4_DSPARK_CIRCUIT_BREAKER:-0}" == "1" ]]; then
  unset DS4_DSPARK_NO_CIRCUIT_BREAKER
else
  export DS4_DSPARK_NO_CIRCUIT_BREAKER=1
fi
# K3/K4 verifier batches are bandwidth-bound in uncached Q8 projections.
# Compute all tiny-batch rows in one block so each packed weight row is read
# once.  Keep the direct-MoE shortcut on the Q4 DSpark sidecar; the Q2 target
# verifier benefits from its expert-grouped path at four rows.
if [[ "${DS4_CUDA_Q8_BATCH_REUSE:-1}" == "1" ]]; then
  export DS4_CUDA_Q8_BATCH_REUSE=1
else
  unset DS4_CUDA_Q8_BATCH_REUSE
fi
if [[ "${DS4_CUDA_MOE_TINY_DIRECT:-1}" == "1" ]]; then
  export DS4_CUDA_MOE_TINY_DIRECT=1
else
  unset DS4_CUDA_MOE_TINY_DIRECT
fi
if [[ "${DS4_CUDA_MOE_TINY_DIRECT_Q4_ONLY:-1}" == "1" ]]; then
  export DS4_CUDA_MOE_TINY_DIRECT_Q4_ONLY=1
else
  unset DS4_CUDA_MOE_TINY_DIRECT_Q4_ONLY
fi

# Match the released DeepSeek forward_head contract and retain both recurring
# verifier graph topologies by default.  Normalize explicit zero values by
# unsetting the rollback variables because the C/CUDA paths test their
# presence, not their textual value.
if [[ "$CONFIDENCE_POST_NORM" == "1" ]]; then
  export DS4_DSPARK_CONFIDENCE_POST_NORM=1
  CONFIDENCE_INPUT="post-RMSNorm (rollback)"
else
  unset DS4_DSPARK_CONFIDENCE_POST_NORM
  CONFIDENCE_INPUT="pre-RMSNorm"
fi
if [[ "$GRAPH_TOPOLOGY_CACHE_DISABLE" == "1" ]]; then
  export DS4_CUDA_DSPARK_GRAPH_TOPOLOGY_CACHE_DISABLE=1
  GRAPH_TOPOLOGY_CACHE="single-slot (rollback)"
else
  unset DS4_CUDA_DSPARK_GRAPH_TOPOLOGY_CACHE_DISABLE
  GRAPH_TOPOLOGY_CACHE="two-slot"
fi

# The look-ahead host capture is intentionally not used with DSpark yet.  The
# normal token graphs remain available for fallback; separate K-aware families
# handle the drafter and the fused [current + K draft] target verifier.
unset DS4_CUDA_TOKEN_GRAPH_PIPELINE
unset DS4_CUDA_MTP_GRAPH
unset DS4_CUDA_MTP_TENSOR_CORES

if [[ "$TELEMETRY" == "1" ]]; then
  export DS4_DSPARK_TIMING=1
  export DS4_DSPARK_LOG=1
  export DS4_CUDA_TOKEN_GRAPH_VERBOSE=1
  export DS4_CUDA_DSPARK_GRAPH_VERBOSE=1
else
  unset DS4_DSPARK_TIMING
  unset DS4_DSPARK_LOG
  unset DS4_CUDA_TOKEN_GRAPH_VERBOSE
  unset DS4_CUDA_DSPARK_GRAPH_VERBOSE
fi

echo "Target: $MODEL"
echo "DSpark: $DSPARK (draft=$DRAFT)"
echo "Cache:  profile=$MEMORY_PROFILE Q8->F16=${DS4_CUDA_Q8_F16_CACHE_MB} MiB compact-priority=${DS4_CUDA_DSPARK_CACHE_COMPACT:-0}, weight limit=${DS4_CUDA_WEIGHT_CACHE_LIMIT_GB} GiB"
echo "Memory: secondary-copy=${DS4_CUDA_COPY_SECONDARY_MODEL:-1}, secondary-pipelined=$DS4_CUDA_SECONDARY_COPY_PIPELINED, drop-copied-source-pages=${DS4_CUDA_DROP_COPIED_MODEL_PAGES:-0}"
echo "Prefill: chunk=$PREFILL_CHUNK final-logits-only=${DS4_PREFILL_FINAL_LOGITS_ONLY:-0}"
echo "Streaming: decode-heartbeat=${DS4_STREAM_HEARTBEAT_SEC}s"
echo "KV:     policy=$DS4_KV_PREFILL_CHECKPOINT_POLICY keep-long-text-hits=$DS4_KV_KEEP_LONG_TEXT_HITS canonical-min-sec=$DS4_KV_CANONICAL_PREFILL_MIN_SEC cold-max=$KV_COLD_MAX_TOKENS long-anchor-min=$DS4_KV_LONG_COLD_ANCHOR_MIN_TOKENS trim=$DS4_KV_LONG_COLD_ANCHOR_TRIM_TOKENS disk-mb=$KV_DISK_SPACE_MB"
echo "Context guard: physical=$CTX advertise=${ADVERTISE_CONTEXT_PCT}%"
echo "DSpark scheduler: full 5-slot draft, adaptive verifier K=0..$DRAFT, always-draft=${DS4_DSPARK_ALWAYS_DRAFT:-0}, circuit-breaker=${DS4_DSPARK_CIRCUIT_BREAKER:-0}, fused K+1 verifier, graphs=on, telemetry=$TELEMETRY"
echo "DSpark parity: confidence-input=$CONFIDENCE_INPUT, verifier-topology-cache=$GRAPH_TOPOLOGY_CACHE"
echo "DSpark sampling: lossless p/q rejection for top_k=0 top_p=1 min-p policy (rollback DS4_DSPARK_REJECTION_DISABLE=1)"
echo "GB10 verifier: Q8 batch-reuse=${DS4_CUDA_Q8_BATCH_REUSE:-0}, Q4-sidecar direct-MoE=${DS4_CUDA_MOE_TINY_DIRECT_Q4_ONLY:-0}, tiny-TC=${DS4_CUDA_DSPARK_TENSOR_CORES:-0}, tiny-TC-Q8=${DS4_CUDA_DSPARK_TENSOR_CORES_Q8:-0}"
if [[ "${DS4_CUDA_NVTX:-0}" == "1" ||
      "${DS4_CUDA_NSYS_PREFILL_START_POS:-}" != "" ||
      "${DS4_CUDA_NSYS_PREFILL_START_POSITIONS:-}" != "" ||
      "${DS4_CUDA_NSYS_CAPTURE_START_POS:-}" != "" ]]; then
  echo "Profiling: NVTX=1 prefill-capture-start=${DS4_CUDA_NSYS_PREFILL_START_POS:-disabled} prefill-capture-list=${DS4_CUDA_NSYS_PREFILL_START_POSITIONS:-disabled} decode-capture-start=${DS4_CUDA_NSYS_CAPTURE_START_POS:-disabled} decode-capture-tokens=${DS4_CUDA_NSYS_CAPTURE_TOKENS:-disabled}"
fi
echo "Server: http://0.0.0.0:$PORT"

exec ./ds4-server \
  --cuda \
  -m "$MODEL" \
  --dspark "$DSPARK" \
  --dspark-draft "$DRAFT" \
  --prefill-chunk "$PREFILL_CHUNK" \
  -c "$CTX" \
  --advertise-context-pct "$ADVERTISE_CONTEXT_PCT" \
  -n "$MAX_TOKENS" \
  -t "$THREADS" \
  --host 0.0.0.0 \
  --port "$PORT" \
  --kv-disk-dir "$KV_DIR" \
  --kv-cache-cold-max-tokens "$KV_COLD_MAX_TOKENS" \
  --kv-disk-space-mb "$KV_DISK_SPACE_MB"
