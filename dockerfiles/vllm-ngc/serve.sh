exec vllm serve "$@"
