#!/usr/bin/env bash
# Regenerates every number and figure of docs/model-card.md from the shipped bundle and the training
# logs: loss curves, the tokenizer's ceiling (the checker on VQ round trips of the evaluation scenes),
# checker accuracy of `ar` on held-out prompts at the bundle's recommended sampling (+ sample sheet; extra
# arguments go to eval, e.g. --cfg 4), next-token entropy on flat vs. textured cells, and the bundle's size
# and load time. Prints the tables; writes the PNGs into
# docs/model-card/. Needs runs/held-out.safetensors (scripts/train-default.sh makes it).
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=build/bin/speculum-cli
OUT=docs/model-card
PROMPTS=${PROMPTS:-200}
export OMP_WAIT_POLICY=PASSIVE
mkdir -p "$OUT"
$CLI plot --csv resources/training/vq/log.csv --columns psnr_shapes,psnr_emoji \
  --title "VQ tokenizer: held-out reconstruction" --y-label "PSNR (dB)" --out "$OUT/vq-psnr.png"
$CLI plot --csv resources/training/vq/log.csv --columns recon,codebook,commit \
  --title "VQ tokenizer: training losses" --y-label "loss" --out "$OUT/vq-loss.png"
$CLI plot --csv resources/training/target/log.csv --columns loss,held_out_loss \
  --title "Target, stages 1-2 (bag of words): next-token cross-entropy" --y-label "nats / token" --out "$OUT/target-loss.png"
$CLI plot --csv resources/training/target-ctx/log.csv --columns loss,held_out_loss \
  --title "Target, stage 3 (caption encoder, cell positions)" --y-label "nats / token" --out "$OUT/target-grown-loss.png"
$CLI plot --csv resources/training/target-contrast/log.csv --columns loss,held_out_loss,caption_contrast \
  --title "Target, stage 4 (caption contrast on the objects' tops)" --y-label "nats / token" --out "$OUT/target-contrast-loss.png"
$CLI plot --csv resources/training/target-gpu/log.csv --columns loss,held_out_loss,caption_contrast \
  --title "Target, stage 5 (the contrast at batch 128, on a GPU)" --y-label "nats / token" --out "$OUT/target-gpu-loss.png"
$CLI plot --csv resources/training/target-cpu/log.csv --columns loss,held_out_loss,caption_contrast \
  --title "Target, stage 6 (the contrast at batch 128, on the CPUs)" --y-label "nats / token" --out "$OUT/target-cpu-loss.png"
$CLI plot --csv resources/training/target-stage7/log.csv --columns loss,held_out_loss,caption_contrast \
  --title "Target, stage 7 (stage 6 carried on: a fresh cosine on fresh scenes)" --y-label "nats / token" --out "$OUT/target-stage7-loss.png"
$CLI inspect resources/models/default
$CLI check --ground-truth 1000 --seed 700000000 --through-tokenizer resources/models/default | sed -n 1,11p
$CLI eval --prompts "$PROMPTS" --sheet "$OUT/samples.png" "$@"
$CLI entropy --held-out runs/held-out.safetensors --count 256
