A=(--num-layers 2)
if [[ "$X" == "" ]]; then
  A+=(--hidden-size 64)
fi
torchrun --nproc_per_node 2 pretrain_gpt.py ${A[@]} --num-attention-heads 2 --seq-length 128 --micro-batch-size 1 --vocab-size 100 --bf16
