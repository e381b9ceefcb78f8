#!/bin/bash
# Tessera and llama.cpp alternated on random-weight GGUFs of LFM2-350M,
# Qwen3.5-0.8B and Gemma 4 E2B (bench/make_random_gguf.py --head-type q8_0 -o
# $TESSERA_HOME/bench/SHAPE-random.q4_0.gguf), 2 threads; the peer built as
# ../shared/PEER.md says. Results: docs/BENCHMARKING.md.
B=${LLAMA_BENCH:-/tmp/peer/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin/llama-bench}
T=${TESSERA_BIN:-build/tessera}
export TESSERA_HOME=${TESSERA_HOME:-$HOME/.cache/tessera}
for shape in lfm2-350m qwen3.5-0.8b gemma4-e2b; do
  G=$TESSERA_HOME/bench/${shape}-random.q4_0.gguf
  $T bench $G -t 2 -p 16 -n 4 -r 1 --no-bandwidth > /dev/null 2>&1   # converts once
  for round in 1 2; do
    echo "== $shape round $round"
    $T bench $G -t 2 -p 128 -n 32 -r 2 --no-bandwidth --json 2>/dev/null | python3 -c "
import json,sys; j=json.load(sys.stdin); print('ours', round(j['pp_tok_s'],1), round(j['tg_tok_s'],1))"
    $B -m $G -t 2 -p 128 -n 32 -r 2 -o json 2>/dev/null | python3 -c "
import json,sys; j=json.load(sys.stdin); print('llama.cpp', [(r['n_prompt'], r['n_gen'], round(r['avg_ts'],1)) for r in j])"
  done
done
