#!/usr/bin/env bash
# The default model's recipe study (issue 29): pilots of at most 45 minutes of 2-core training (here two pilots side
# by side, one core each, so that they meet the same machine), each evaluated on the model card's held-out prompts
# against the shipped model with `compare`'s paired intervals. Resumable: a pilot whose run folder has a checkpoint
# continues. Results: runs/p29/<pilot>.txt, <pilot>-compare.txt; the table is in docs/model-card.md.
#   bash scripts/default-model-pilots.sh data          # the pilots' corpus and held-out set (once)
#   bash scripts/default-model-pilots.sh PILOT...      # train the pilots side by side, then evaluate each
#   bash scripts/default-model-pilots.sh eval NAME=RUN_DIR...  # evaluate runs trained elsewhere (scripts/train-gpu.sh);
#                                       # a NAME with "scratch" or "deeper" is a run from nothing, paired with stage 2 too
# Pilots (each continues the shipped target, resources/training/target-ctx, on 8,000 fresh scenes, seeds
# 20,000..27,999, plus the emoji training split; 1 thread, batch 16, peak LR 3e-4 after 50 warm-up steps, cosine over
# 800 steps, stopped by the clock after $MINUTES minutes):
#   fresh      the plain next-token loss
#   object4    each token's loss weighted by 1 + 4 x the share of its cell objects cover (--object-weight 4)
#   reading    the plain loss + 0.2 x the caption-reading loss: a reader on each image's first object row predicts the
#              caption's words (--caption-reading 0.2)
#   reading-light  the same at a tenth of the weight (--caption-reading 0.02)
#   fresh-hot  as fresh at a peak LR of 1e-3 (the shipped run's): whether a continuation is merely too gentle to re-learn
#              the binding
#   contrast   the plain loss + 0.1 x the caption-contrast loss: each image is also scored under a foil (its caption
#              with one shape, count, side or size word swapped) and the model learns to prefer its caption
#              (--caption-contrast 0.1; one more forward and backward pass per step)
#   contrast-strong  the same at ten times the weight (--caption-contrast 1)
#   contrast-tops  the contrast on each object's top two rows of cells only, where generation commits to a shape
#              (--caption-contrast 0.1 --contrast-on object-tops)
# Eight that continue the caption-contrast run's end (runs/target-contrast, step 3,000) on 8,000 more fresh scenes (seeds
# 28,000..35,999) plus the emoji training split, the run's loss, peak LR 2e-4 after 50 warm-up steps, cosine over 800:
#   more       the run's recipe as it is: whether it still gains
#   relations  as more, with 4,000 relation scenes (seeds from 40,000, --families relation) in place of corpus c:
#              57 % of the scenes relations instead of 35 % (they fail on their two small objects' shapes)
#   exchange   half of each relation's foils exchange its two colours or two shapes (--contrast-exchange 0.5): the
#              binding that relations fail on (the wrong object gets the colour), which no one-word swap asks
#   tops-heavy  as more at three times the contrast's weight (--caption-contrast 0.3)
#   tops-strong as more at ten times the weight (--caption-contrast 1): where on the tops alone the weight stops paying
#   deeper     as more, grown to 8 blocks (--layers 8): the two new blocks start as the identity (zero output
#              projections), so the run starts as the run's end and the depth between caption and object grows by a
#              third, for about a third more per token
#   deeper-hot as deeper at peak LR 6e-4: in `deeper` the new blocks hardly left the identity at 2e-4
#   deeper-fast as deeper with only the two new blocks at 5 x the rate (--grown-lr-scale 5: peak 1e-3, the rate the
#              other blocks were trained at), the learned ones at the run's gentle 2e-4
#   own-passes as more, with the shipped target's own drawings that the prompt checker passes (train samples
#              --only-passing on 10,000 training captions, seeds 40,000..49,999, at the bundle's sampling) given twice
#              beside corpora c and d: fine-tuning on its correct samples, the checker as a reward (rejection sampling)
#   own-only   those passes alone (no scenes, so no contrast: they have no object masks), 400 steps: the on-policy
#              signal undiluted
#   prefer     as more for 400 steps, plus the preference loss (DPO, --preference 1, beta 0.1, 8 pairs per step) on the
#              shipped target's own samples judged by the checker (train samples --verdicts, 4 per caption for 2,500
#              training captions, seeds 60,000..): pushes up what it draws right and down what it draws wrong
# and one that is not a pilot but a whole run: stage 4 of scripts/train-default.sh (from stage 3's end, the first
# 8,000 fresh scenes, 3,000 steps at peak LR 3e-4) with one change, the target grown to 8 blocks; it takes about
# 70 minutes of both cores, so run it alone: THREADS=2 MINUTES=90 ... grown-run
#   grown-run  depth at the run's full length, against the shipped target (the run's end at 6 blocks)
# and one from nothing (the shipped architecture, 6 x 192 with the caption encoder and cell positions; 1 thread, batch
# 16, peak LR 1e-3 after 100 warm-up steps, cosine over 4,000 steps, stopped by the clock):
#   simple     8,000 scenes on flat and gradient backgrounds only (seeds from 20,000 on), no emoji: whether the
#              data's difficulty, not the loss, holds shape binding back (a curriculum's first stage)
# and one from nothing at another shape, on `fresh`'s data (peak LR 1e-3 after 100 warm-up steps, cosine over 2,300,
# what 45 minutes of both cores reach at 1.16 s per step):
#   deep-narrow  12 blocks x 128 (heads of 32) instead of 6 x 192: about the same cost per image, twice the depth
#                between the caption and an object's first tokens; run it alone with THREADS=2 (both cores)
# and one from nothing with the run's lever from its first step, as long as a session allows (both cores, alone:
# THREADS=2 MINUTES=85 ... scratch-contrast):
#   scratch-contrast  the shipped architecture from nothing, the caption contrast on the objects' tops (0.1) from step 0,
#              on 36,000 scenes (the shipped run's 20,000 without the emoji, corpus-00/01, and corpora a-d) + the emoji split
#              twice (16 % of the draws, as in stage 1), peak LR 1e-3 after 100 warm-up steps, cosine over 2,400 steps
#              (first set to 4,000, shortened to 3,000 at step 200 and to 2,400 at step 520 so that it ends inside a
#              session: the rate dropped by 0.1 % and 3 %); against stage 2's end (resources/training/target, 3,800
#              steps, bagged as shipped-stage2) and the shipped target (11,800 steps)
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=${CLI:-build/bin/speculum-cli}
P=runs/p29
PROMPTS=${PROMPTS:-400}
MINUTES=${MINUTES:-40}
THREADS=${THREADS:-1}  # per pilot
export OMP_WAIT_POLICY=PASSIVE
mkdir -p "$P"

if [ "${1:-}" = data ]; then
  [ -d "$P/vq" ] || cp -r resources/training/vq "$P/vq"
  [ -f "$P/emoji/captions.jsonl" ] || $CLI data emoji --out "$P/emoji"
  # Two halves side by side (the renderer runs on one core): the first with the emoji training split.
  [ -f "$P/corpus-a.safetensors" ] || OMP_NUM_THREADS=1 $CLI train tokenize --vq "$P/vq" --emoji "$P/emoji" --count 4000 \
    --seed 20000 --out "$P/corpus-a.safetensors" &
  [ -f "$P/corpus-b.safetensors" ] || OMP_NUM_THREADS=1 $CLI train tokenize --vq "$P/vq" --count 4000 --seed 24000 \
    --out "$P/corpus-b.safetensors" &
  wait
  [ -f "$P/corpus-c.safetensors" ] || OMP_NUM_THREADS=1 $CLI train tokenize --vq "$P/vq" --count 4000 --seed 28000 \
    --out "$P/corpus-c.safetensors" &
  [ -f "$P/corpus-d.safetensors" ] || OMP_NUM_THREADS=1 $CLI train tokenize --vq "$P/vq" --emoji "$P/emoji" --count 4000 \
    --seed 32000 --out "$P/corpus-d.safetensors" &
  wait
  # The shipped run's 20,000 scenes without the emoji, in two halves side by side.
  for k in 0 1; do
    [ -f "$P/corpus-0$k.safetensors" ] || OMP_NUM_THREADS=1 $CLI train tokenize --vq "$P/vq" --count 10000 \
      --seed $((10000 * k)) --out "$P/corpus-0$k.safetensors" &
  done
  wait
  # Fresh scenes for the GPU runs (scripts/train-gpu.sh), side by side: the first with the emoji training split.
  [ -f "$P/corpus-g100000.safetensors" ] || OMP_NUM_THREADS=1 $CLI train tokenize --vq "$P/vq" --emoji "$P/emoji" \
    --count 10000 --seed 100000 --out "$P/corpus-g100000.safetensors" &
  [ -f "$P/corpus-g110000.safetensors" ] || OMP_NUM_THREADS=1 $CLI train tokenize --vq "$P/vq" --count 10000 \
    --seed 110000 --out "$P/corpus-g110000.safetensors" &
  wait
  [ -f "$P/corpus-relations.safetensors" ] || $CLI train tokenize --vq "$P/vq" --count 4000 --seed 40000 \
    --families relation --out "$P/corpus-relations.safetensors"
  [ -f "$P/corpus-simple.safetensors" ] || $CLI train tokenize --vq "$P/vq" --count 8000 --seed 20000 \
    --backgrounds flat,gradient --out "$P/corpus-simple.safetensors"
  # The same 512 held-out scenes without the emoji: a shapes-only model has no emoji words to read them with.
  [ -f "$P/held-out-shapes.safetensors" ] || $CLI train tokenize --vq "$P/vq" --count 512 --seed 800000000 \
    --out "$P/held-out-shapes.safetensors"
  [ -f "$P/held-out.safetensors" ] || $CLI train tokenize --vq "$P/vq" --emoji "$P/emoji" --emoji-held-out --count 512 \
    --seed 800000000 --out "$P/held-out.safetensors"
  exit 0
fi

declare -A run_dir from_nothing
pilots=()
if [ "${1:-}" = eval ]; then  # runs trained elsewhere (scripts/train-gpu.sh): eval gpu-scratch=DIR ...
  shift
  for named in "$@"; do
    pilot=${named%%=*}
    pilots+=("$pilot") run_dir[$pilot]=${named#*=}
    [[ $pilot == *scratch* || $pilot == *deeper* ]] && from_nothing[$pilot]=1
  done
  set --
fi
# Each pilot's training arguments.
args_of() {
  local continued=(--corpus "$P/corpus-a.safetensors" "$P/corpus-b.safetensors" --init-from resources/training/target-ctx
                   --steps 800 --warmup 50)
  local run_end=(--corpus "$P/corpus-c.safetensors" "$P/corpus-d.safetensors" --init-from runs/target-contrast --steps 800
                 --warmup 50 --held-out "$P/held-out.safetensors" --contrast-on object-tops --lr 2e-4)
  case "$1" in
    more) echo "${run_end[@]}" --caption-contrast 0.1 ;;
    exchange) echo "${run_end[@]}" --caption-contrast 0.1 --contrast-exchange 0.5 ;;
    relations) echo "${run_end[@]/$P\/corpus-c.safetensors/$P/corpus-relations.safetensors}" --caption-contrast 0.1 ;;
    tops-heavy) echo "${run_end[@]}" --caption-contrast 0.3 ;;
    tops-strong) echo "${run_end[@]}" --caption-contrast 1 ;;
    deeper) echo "${run_end[@]}" --caption-contrast 0.1 --layers 8 ;;
    deeper-hot) echo "${run_end[@]/2e-4/6e-4}" --caption-contrast 0.1 --layers 8 ;;
    deeper-fast) echo "${run_end[@]}" --caption-contrast 0.1 --layers 8 --grown-lr-scale 5 ;;
    own-passes) local own=("$P/own-passes-0.safetensors" "$P/own-passes-1.safetensors")
      echo --corpus "$P/corpus-c.safetensors" "$P/corpus-d.safetensors" "${own[@]}" "${own[@]}" "${run_end[@]:3}" \
        --caption-contrast 0.1 ;;
    prefer) echo "${run_end[@]/800/400}" --caption-contrast 0.1 --preference 1 --judged "$P/judged-0.safetensors" \
      "$P/judged-1.safetensors" ;;
    own-only) echo --corpus "$P/own-passes-0.safetensors" "$P/own-passes-1.safetensors" "${run_end[@]:3:2}" --steps 400 \
      --warmup 50 --held-out "$P/held-out.safetensors" --lr 2e-4 ;;
    grown-run) echo "${continued[@]/800/3000}" --held-out "$P/held-out.safetensors" --caption-contrast 0.1 \
      --contrast-on object-tops --lr 3e-4 --layers 8 ;;
    fresh) echo "${continued[@]}" --held-out "$P/held-out.safetensors" --object-weight 0 --lr 3e-4 ;;
    object4) echo "${continued[@]}" --held-out "$P/held-out.safetensors" --object-weight 4 --lr 3e-4 ;;
    reading) echo "${continued[@]}" --held-out "$P/held-out.safetensors" --caption-reading 0.2 --lr 3e-4 ;;
    reading-light) echo "${continued[@]}" --held-out "$P/held-out.safetensors" --caption-reading 0.02 --lr 3e-4 ;;
    fresh-hot) echo "${continued[@]}" --held-out "$P/held-out.safetensors" --object-weight 0 --lr 1e-3 ;;
    contrast) echo "${continued[@]}" --held-out "$P/held-out.safetensors" --caption-contrast 0.1 --lr 3e-4 ;;
    contrast-strong) echo "${continued[@]}" --held-out "$P/held-out.safetensors" --caption-contrast 1 --lr 3e-4 ;;
    contrast-tops) echo "${continued[@]}" --held-out "$P/held-out.safetensors" --caption-contrast 0.1 \
      --contrast-on object-tops --lr 3e-4 ;;
    simple) echo --corpus "$P/corpus-simple.safetensors" --held-out "$P/held-out-shapes.safetensors" --image-positions \
      --steps 4000 --warmup 100 --lr 1e-3 ;;
    deep-narrow) echo --corpus "$P/corpus-a.safetensors" "$P/corpus-b.safetensors" --held-out "$P/held-out.safetensors" \
      --dim 128 --layers 12 --heads 4 --steps 2300 --warmup 100 --lr 1e-3 ;;
    scratch-contrast) echo --corpus "$P"/corpus-{00,01,a,b,c,d}.safetensors --held-out "$P/held-out.safetensors" \
      --steps 2400 --warmup 100 --lr 1e-3 --caption-contrast 0.1 --contrast-on object-tops ;;
    *) echo "unknown pilot '$1' (more, exchange, relations, tops-heavy, tops-strong, deeper, deeper-hot, deeper-fast, own-passes, own-only, prefer, grown-run, fresh, object4, reading, reading-light, fresh-hot, contrast, contrast-strong, contrast-tops, simple, deep-narrow, scratch-contrast)" >&2; exit 2 ;;
  esac
}
for pilot in "$@"; do args_of "$pilot" > /dev/null; done
# The shipped target's own drawings, judged by the checker, for the pilots that train on them (made once, two halves
# side by side on one thread each, ~13 minutes).
for pilot in "$@"; do
  case "$pilot" in own-passes | own-only)
    for k in 0 1; do
      [ -f "$P/own-passes-$k.safetensors" ] || $CLI train samples --bundle resources/models/default --only-passing \
        --count 5000 --scene-seed $((40000 + 5000 * k)) --threads 1 --out "$P/own-passes-$k.safetensors" > /dev/null &
    done
    wait ;;
  prefer)
    for k in 0 1; do
      [ -f "$P/judged-$k.safetensors" ] || $CLI train samples --bundle resources/models/default --verdicts --per-caption 4 \
        --count 5000 --scene-seed $((60000 + 5000 * k)) --threads 1 --out "$P/judged-$k.safetensors" > /dev/null &
    done
    wait ;;
  esac
done
for pilot in "$@"; do
  pilots+=("$pilot") run_dir[$pilot]=$P/$pilot
  [ "$pilot" = scratch-contrast ] && from_nothing[$pilot]=1
  # timeout sends SIGINT: the trainer checkpoints and exits; rerunning resumes.
  # shellcheck disable=SC2046  # the arguments split on purpose
  timeout -s INT "${MINUTES}m" $CLI train target --vq "$P/vq" $(args_of "$pilot") --out "$P/$pilot" \
    --batch 16 --checkpoint-every 200 --threads "$THREADS" > "$P/$pilot-train.log" 2>&1 &
done
wait
# The shipped model's verdicts on the same prompts, once (eval is deterministic for its seeds).
shipped=shipped
[ "$PROMPTS" = 400 ] || shipped=shipped-$PROMPTS
[ -f "$P/$shipped.csv" ] || $CLI eval --prompts "$PROMPTS" --csv "$P/$shipped.csv" > "$P/$shipped.txt"
for pilot in "${pilots[@]}"; do
  $CLI train bundle --vq "$P/vq" --target "${run_dir[$pilot]}" --out "$P/$pilot-bundle" --cfg 1.5 > /dev/null
  $CLI eval --bundle "$P/$pilot-bundle" --prompts "$PROMPTS" --csv "$P/$pilot.csv" > "$P/$pilot.txt"
  $CLI compare "$P/$shipped.csv" "$P/$pilot.csv" > "$P/$pilot-compare.txt" || [ $? -eq 2 ]  # 2: outside the tolerance
  echo "== $pilot"; cat "$P/$pilot-compare.txt"
  if [ "${from_nothing[$pilot]:-0}" = 1 ]; then  # a pilot from nothing is also paired with stage 2's end (3,800 steps)
    [ -d "$P/shipped-stage2-bundle" ] || $CLI train bundle --vq "$P/vq" --target resources/training/target \
      --out "$P/shipped-stage2-bundle" --cfg 1.5 > /dev/null
    [ -f "$P/shipped-stage2-$PROMPTS.csv" ] || $CLI eval --bundle "$P/shipped-stage2-bundle" --prompts "$PROMPTS" \
      --csv "$P/shipped-stage2-$PROMPTS.csv" > "$P/shipped-stage2-$PROMPTS.txt"
    $CLI compare "$P/shipped-stage2-$PROMPTS.csv" "$P/$pilot.csv" > "$P/$pilot-vs-stage2.txt" || [ $? -eq 2 ]
    echo "== $pilot against stage 2's end"; cat "$P/$pilot-vs-stage2.txt"
  fi
done
