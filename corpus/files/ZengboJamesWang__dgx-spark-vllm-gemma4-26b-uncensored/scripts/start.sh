#!/bin/bash
set -e

# DGX Spark vLLM Startup Script
# Starts the AEON-7 Gemma-4-26B Uncensored NVFP4 model with optimal settings

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$SCRIPT_DIR/.." && pwd)"

CONTAINER_NAME="vllm-gemma4-26b"
# Use AEON-7 pre-built image for DGX Spark (SM 12.1) with transformers 5.5.0
IMAGE="ghcr.io/aeon-7/vllm-spark-gemma4-nvfp4:latest"
MODEL_PATH="/root/.cache/huggingface/gemma-4-26B-it-uncensored-nvfp4"
STARTUP_SCRIPT="$SCRIPT_DIR/startup.sh"
PATCH_FILE="$REPO_DIR/patches/gemma4_patched.py"

echo "=================================="
echo "DGX Spark vLLM Starter"
echo "=================================="

# Check Docker
if ! command -v docker &> /dev/null; then
    echo "❌ Docker not found. Please install Docker first."
    exit 1
fi

# Check NVIDIA runtime
if ! docker info 2>/dev/null | grep -q "nvidia"; then
    echo "⚠️  Warning: NVIDIA Container Runtime may not be configured."
    echo "   Make sure 'docker run --gpus all' works on your system."
fi

# Check patch file exists
if [ ! -f "$PATCH_FILE" ]; then
    echo "❌ Patch file not found: $PATCH_FILE"
    echo "   This patch is required for the AEON-7 model to load correctly."
    exit 1
fi

# Check startup script exists
if [ ! -f "$STARTUP_SCRIPT" ]; then
    echo "❌ Startup script not found: $STARTUP_SCRIPT"
    exit 1
fi

# Check if port 8001 is already in use
if lsof -Pi :8001 -sTCP:LISTEN -t >/dev/null 2>&1; then
    echo "⚠️  Port 8001 is already in use."
    echo "   Stop the existing service first or change the port."
    exit 1
fi

# Check disk space (need at least 30GB free)
AVAILABLE_GB=$(df -BG "$HOME" | awk 'NR==2 {print $4}' | sed 's/G//')
if [ "$AVAILABLE_GB" -lt 30 ]; then
    echo "⚠️  Warning: Only ${AVAILABLE_GB}GB disk space available."
    echo "   Model + Docker image need ~30-40GB. Free up space first."
    exit 1
fi

# Check if model exists locally, download if not
LOCAL_MODEL_DIR="${HOME}/.cache/huggingface/gemma-4-26B-it-uncensored-nvfp4"
if [ ! -f "$LOCAL_MODEL_DIR/config.json" ]; then
    echo ""
    echo "📦 Model not found at: $LOCAL_MODEL_DIR"
    echo "   Downloading now (~15GB)..."
    bash "$SCRIPT_DIR/download-model.sh"
fi

# Stop existing container
if docker ps -a --format '{{.Names}}' | grep -q "^${CONTAINER_NAME}$"; then
    echo "Stopping existing container: $CONTAINER_NAME"
    docker stop "$CONTAINER_NAME" > /dev/null 2>&1 || true
    docker rm "$CONTAINER_NAME" > /dev/null 2>&1 || true
fi

# Ensure HuggingFace cache directory exists
mkdir -p ~/.cache/huggingface

# Only pull image if not present locally (avoids DNS issues during boot)
if ! docker image inspect "$IMAGE" > /dev/null 2>&1; then
    echo ""
    echo "Pulling image: $IMAGE"
    docker pull "$IMAGE"
else
    echo ""
    echo "Using local image: $IMAGE"
fi

echo ""
echo "Starting vLLM container..."
echo "Model: $MODEL_PATH"
echo "This may take 5-10 minutes on first run for model download + CUDA graph compilation."
echo ""

docker run -d --name "$CONTAINER_NAME" \
  --restart unless-stopped \
  --gpus all \
  --ipc=host \
  -p 8001:8001 \
  -v ~/.cache/huggingface:/root/.cache/huggingface \
  -v "$STARTUP_SCRIPT:/startup.sh" \
  -v "$PATCH_FILE:/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/gemma4.py" \
  "$IMAGE" \
  bash /startup.sh

echo ""
echo "Container started: $CONTAINER_NAME"
echo ""
echo "⏳ Waiting for server to be ready (this can take 5-10 min on first run)..."

for i in {1..60}; do
    if curl -s http://localhost:8001/v1/models > /dev/null 2>&1; then
        echo ""
        echo "✅ Server is ready!"
        echo ""
        echo "Test it:"
        echo "  curl http://localhost:8001/v1/chat/completions \\"
        echo "    -H 'Content-Type: application/json' \\"
        echo "    -d '{\"model\":\"gemma4-26b-uncensored\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}],\"max_tokens\":100}'"
        echo ""
        echo "View logs: docker logs -f $CONTAINER_NAME"
        echo "Stop: docker stop $CONTAINER_NAME"
        exit 0
    fi
    echo -n "."
    if [ $((i % 10)) -eq 0 ]; then
        echo " ($((i*10))s)"
    fi
    sleep 10
done

echo ""
echo "⚠️  Server did not become ready within 10 minutes."
echo "Check logs: docker logs $CONTAINER_NAME"
exit 1
