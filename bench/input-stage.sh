#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Input-stage benchmark: JPEG files -> decoded RGB images, images per second.
#
#   bench/input-stage.sh [--runs N] [--quick] [--count N] [--epochs N]
#                        [--tj-sample N] [--output FILE]
#
# Builds its own release build (build-bench/), makes the corpus
# (bench/make-corpus.py), then measures, median of N interleaved runs:
#   (a) datasetsrc n-threads=0 ! imagedec n-threads=1 ! fakesink (pinned to 1 core)
#   (a2) (a) with datasetsrc's default two reader threads       (pinned to 1 core)
#   (s) (a) over the tjbench sample files only: the like-for-like row for (d)
#   (b) the same with imagedec n-threads=2                     (2 cores)
#   (c) multifilesrc ! jpegdec ! fakesink, native I420 output, and
#       ! videoconvert ! video/x-raw,format=RGB                (pinned to 1 core)
#   (d) tjbench decode-only to RGB on a fixed sample of files  (pinned to 1 core)
#   (d3) bench/decode-loop over those sample files in turn, as many images
#        as (s): (s) without the pipeline                   (pinned to 1 core)
#   (d4) (d3) with each file decoded 200 times in a row, tjbench's order
#   (r) (s) followed by augment (RandomResizedCrop 224, flip): imagedec
#       decodes only each crop box (decode-region, the default)  (pinned to 1 core)
#   (r0) (r) with imagedec decode-region=false: whole images      (pinned to 1 core)
#   (d5) (d3) decoding only a RandomResizedCrop box of each file (decode-loop -c)
#   (d6) (d5) reading each file to its end, as imagedec does the first time
#        it sees a file (decode-loop -c -a)
#   (e) PIL Image.open(BytesIO(data)).convert('RGB')           (pinned to 1 core)
#   (f) (a) with imagedec min-short-side=256 (scales=fast)    (pinned to 1 core)
#   (f2) (f) with scales=all                                   (pinned to 1 core)
# and writes a Markdown report to stdout and to docs/benchmarks/input-stage.md
# (--quick: 200 images, 1 run, report to bench/out/input-stage-quick.md).
#
# Needs: meson, ninja, a C compiler, gst-launch-1.0 (gstreamer1.0-tools),
# gstreamer1.0-plugins-good/-base, tjbench (libjpeg-turbo-progs), taskset,
# /usr/bin/python3 with PIL (python3-pil), mate-backgrounds.

set -euo pipefail
# shellcheck source=bench/bench-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh" input-stage "$@"

COUNT=2000
EPOCHS=3
TJ_SAMPLE=30
while [ $# -gt 0 ]; do
  case "$1" in
    --count) COUNT=$2; shift 2 ;;
    --count=*) COUNT=${1#*=}; shift ;;
    --epochs) EPOCHS=$2; shift 2 ;;
    --epochs=*) EPOCHS=${1#*=}; shift ;;
    --tj-sample) TJ_SAMPLE=$2; shift 2 ;;
    --tj-sample=*) TJ_SAMPLE=${1#*=}; shift ;;
    *) bench_option "$@"; shift "$BENCH_SHIFT" ;;
  esac
done
if [ "$QUICK" = 1 ]; then
  COUNT=200; RUNS=1; EPOCHS=1; TJ_SAMPLE=5
fi
bench_default_output
for v in RUNS COUNT EPOCHS TJ_SAMPLE; do
  case ${!v} in ''|*[!0-9]*|0) echo "input-stage.sh: $v must be a positive integer" >&2; exit 2 ;; esac
done
[ "$TJ_SAMPLE" -le "$COUNT" ] || TJ_SAMPLE=$COUNT

for tool in meson ninja gst-launch-1.0 gst-inspect-1.0 tjbench taskset lscpu; do
  command -v "$tool" >/dev/null || die "'$tool' not found (see the header of this script)"
done
"$PY" -c 'import PIL' 2>/dev/null || die "$PY with PIL is needed (apt-get install python3-pil)"

BUILD=$ROOT/build-bench
mkdir -p "$OUT/logs"
rm -f "$OUT"/logs/*.log

# --- build ------------------------------------------------------------------
log "building the plugin"
bench_build gst-plugins/libgsttrain.so
[ -f "$BUILD/gst-plugins/libgsttrain.so" ] || die "no $BUILD/gst-plugins/libgsttrain.so after the build"
# The bare decode loop of row (d2), with the same compiler flags as release.
# Its -c mode (row d5) runs imagedec's region decoder and augment's box draw.
cc -O2 -o "$OUT/decode-loop" "$ROOT/bench/decode-loop.c" \
  "$ROOT/elements/data/jpeg-decode.c" "$ROOT/elements/data/augment-ops.c" \
  -I"$ROOT/elements/data" -I"$ROOT/common" \
  $(pkg-config --cflags --libs glib-2.0 libturbojpeg libjpeg) -lm || die "could not build bench/decode-loop.c"

# --- corpus -------------------------------------------------------------------
if [ "$COUNT" = 2000 ]; then CORPUS=$ROOT/bench/corpus; else CORPUS=$OUT/corpus-$COUNT; fi
"$PY" "$ROOT/bench/make-corpus.py" --count "$COUNT" --out "$CORPUS" >&2 || die "make-corpus.py failed"

# Flat numbered view for multifilesrc: NNNNN.jpg -> corpus/classXX/NNNNN.jpg.
FLAT=$OUT/flat-$COUNT
rm -rf "$FLAT"; mkdir -p "$FLAT"
(cd "$CORPUS" && for f in class*/*.jpg; do ln -s "$CORPUS/$f" "$FLAT/${f#*/}"; done)
[ "$(find "$FLAT" -name '*.jpg' | wc -l)" = "$COUNT" ] || die "corpus $CORPUS does not hold $COUNT images"
LAST=$(printf '%05d' $((COUNT - 1)))
[ -e "$FLAT/$LAST.jpg" ] || die "corpus files are not numbered 00000..$LAST"

# tjbench sample: TJ_SAMPLE files evenly spread over the numbering.
TJ_LIST=$OUT/tjbench-sample.txt
: >"$TJ_LIST"
for ((k = 0; k < TJ_SAMPLE; k++)); do
  printf '%s/%05d.jpg\n' "$FLAT" $((k * COUNT / TJ_SAMPLE)) >>"$TJ_LIST"
done

# The same sample as a datasetsrc list file, for row (s). It names the corpus
# files themselves, as row (a) reads them, not the links in FLAT: resolving a
# link costs the reader a second path walk per file.
TJ_DATASET=$OUT/tjbench-sample-dataset.txt
while read -r f; do printf '%s\t0\n' "$(readlink -f "$f")"; done <"$TJ_LIST" >"$TJ_DATASET"

# --- environment ---------------------------------------------------------------
export GST_REGISTRY=$OUT/registry-bench.bin
export GST_PLUGIN_PATH=$BUILD/gst-plugins
unset GST_DEBUG GST_TRACERS GST_DEBUG_DUMP_DOT_DIR GST_DEBUG_FILE GST_PLUGIN_PATH_1_0 || true
for el in datasetsrc imagedec multifilesrc jpegdec videoconvert fakesink; do
  gst-inspect-1.0 "$el" >/dev/null 2>&1 || die "GStreamer element '$el' not found (GST_PLUGIN_PATH=$GST_PLUGIN_PATH)"
done

NCPU=$(nproc)
# (b) uses two cores: the whole machine when it has two, else cores 0 and 1.
if [ "$NCPU" -gt 2 ]; then PIN2_TXT="taskset -c 0,1 "
elif [ "$NCPU" = 2 ]; then PIN2_TXT=""
else die "setup (b) needs 2 cores, this machine has $NCPU"; fi

HELPER=$OUT/input-stage-helper.py
cat >"$HELPER" <<'PYEOF'
# Written by bench/input-stage.sh on every run; edit it there.
import io, json, os, re, resource, statistics, subprocess, sys, time

def cmd_run(argv):
    """run LOG CMD...: run CMD, output to LOG; print 'wall cpu rc'."""
    logf, cmd = argv[0], argv[1:]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(logf, "wb") as fh:
        t0 = time.perf_counter()
        rc = subprocess.call(cmd, stdout=fh, stderr=subprocess.STDOUT)
        wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print("%.6f %.6f %d" % (wall, cpu, rc))

def cmd_pil(argv):
    """pil DIR COUNT: decode DIR/00000.jpg.. with PIL; print 'wall cpu n'."""
    from PIL import Image
    d, n = argv[0], int(argv[1])
    files = [os.path.join(d, "%05d.jpg" % i) for i in range(n)]
    t0, c0 = time.perf_counter(), time.process_time()
    for f in files:
        with open(f, "rb") as fh:
            data = fh.read()
        im = Image.open(io.BytesIO(data)).convert("RGB")
        im.load()
    print("%.6f %.6f %d" % (time.perf_counter() - t0, time.process_time() - c0, n))

def cmd_tj(argv):
    """tj LIST: tjbench each file pinned to core 0; print 'time 0 n'.

    time = sum over files of 1/fps, so n/time is images per second over the
    whole sample (each image decoded once), not an average of rates."""
    files = [l.strip() for l in open(argv[0]) if l.strip()]
    total = 0.0
    for f in files:
        out = subprocess.run(["taskset", "-c", "0", "tjbench", f, "-rgb",
                              "-benchtime", "1", "-warmup", "0.5", "-nowrite"],
                             capture_output=True, text=True)
        m = re.search(r"Decompress\s+-->\s+Frame rate:\s+([0-9.]+)\s+fps", out.stdout)
        if out.returncode != 0 or not m:
            sys.exit("tjbench failed on %s:\n%s%s" % (f, out.stdout, out.stderr))
        total += 1.0 / float(m.group(1))
    print("%.6f %.6f %d" % (total, total, len(files)))

def cmd_corpus(argv):
    """corpus DIR COUNT | corpus LIST: print mean pixels, mean bytes, bits/pixel."""
    from PIL import Image
    if len(argv) == 2:
        files = [os.path.join(argv[0], "%05d.jpg" % i) for i in range(int(argv[1]))]
    else:
        files = [l.strip() for l in open(argv[0]) if l.strip()]
    n = len(files)
    px = by = 0
    for f in files:
        with Image.open(f) as im:
            px += im.size[0] * im.size[1]
        by += os.path.getsize(f)
    print("%.0f %.0f %.2f" % (px / n, by / n, 8.0 * by / px))

def cmd_report(argv):
    """report RESULTS META.json: print the Markdown report."""
    rows = {}
    for line in open(argv[0]):
        sid, run, n, wall, cpu = line.split()
        rows.setdefault(sid, []).append((int(n), float(wall), float(cpu)))
    meta = json.load(open(argv[1]))
    setups = meta["setups"]
    res = {}
    for s in setups:
        r = rows.get(s["id"], [])
        if not r:
            continue
        rates = [n / w for n, w, c in r]
        cpur = [n / c for n, w, c in r if c > 0]
        med = statistics.median(rates)
        res[s["id"]] = dict(med=med, lo=min(rates), hi=max(rates),
                            per_core=med / s["cores"],
                            cpu=statistics.median(cpur) if cpur else None,
                            runs=len(r))
    ref_tj = res.get("d", {}).get("per_core")
    ref_loop = res.get("d2", {}).get("per_core")
    ref_gst = res.get("c2", {}).get("per_core")
    def ratio(v, ref):
        return "%.2fx" % (v / ref) if ref else "n/a"
    out = []
    out.append("| Setup | Cores | images/s (median) | min-max | images/s per core "
               "| images per CPU-second | per core vs tjbench | per core vs decode loop "
               "| per core vs jpegdec->RGB |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in setups:
        if s["id"] not in res:
            continue
        r = res[s["id"]]
        out.append("| %s | %d | %.0f | %.0f-%.0f | %.0f | %s | %s | %s | %s |" % (
            s["label"], s["cores"], r["med"], r["lo"], r["hi"], r["per_core"],
            "%.0f" % r["cpu"] if r["cpu"] and s["id"] != "d" else "n/a",
            ratio(r["per_core"], ref_tj), ratio(r["per_core"], ref_loop),
            ratio(r["per_core"], ref_gst)))
    if all(k in res for k in ("s", "d", "d3", "d4")):
        s, d, d3, d4 = (res[k] for k in ("s", "d", "d3", "d4"))
        out.append("")
        out.append("Like for like on the tjbench sample: the pipeline (s) runs at %.2fx "
                   "tjbench (d), and at %.2fx the bare decode loop over the same files "
                   "in turn (d3) per wall-second, %.2fx per CPU-second. The loop "
                   "itself runs at %.2fx tjbench in that order (d3), and at %.2fx "
                   "when it decodes each file many times in a row as tjbench does "
                   "(d4)." % (s["med"] / d["med"], s["med"] / d3["med"],
                              (s["cpu"] or 0) / (d3["cpu"] or d3["med"]), d3["med"] / d["med"],
                              d4["med"] / d["med"]))
    if all(k in res for k in ("s", "r", "r0", "d", "d3", "d5", "d6")):
        s, r, r0, d, d3, d5, d6 = (res[k] for k in ("s", "r", "r0", "d", "d3", "d5", "d6"))
        # Per image, in microseconds of wall time on the one core.
        t_s, t_r, t_r0 = (1e6 / x["med"] for x in (s, r, r0))
        saved = t_r0 - t_r
        t_dec = t_s - saved
        out.append("")
        out.append("Decoding only the crop (decode-region): in the training pipeline "
                   "(r) against (r0), imagedec's region decodes save %.0f us per image "
                   "(%.0f against %.0f images/s, %.2fx; %.2fx per CPU-second). Row (s) "
                   "decodes the same files whole in %.0f us per image, pipeline "
                   "included, so imagedec decodes what augment needs in %.0f us: "
                   "%.0f images/s, %.2fx tjbench's whole-image rate (d). Without the "
                   "pipeline, the region decodes (d5) run at %.2fx the whole-image "
                   "loop over the same files (d3) and %.2fx tjbench (d); reading "
                   "each file to its end, as imagedec does the first time it sees "
                   "a file (d6), at %.2fx (d3) and %.2fx tjbench." % (
                       saved, r["med"], r0["med"], r["med"] / r0["med"],
                       (r["cpu"] or 0) / (r0["cpu"] or r0["med"]), t_s, t_dec,
                       1e6 / t_dec, 1e6 / t_dec / d["med"], d5["med"] / d3["med"],
                       d5["med"] / d["med"], d6["med"] / d3["med"], d6["med"] / d["med"]))
    print("\n".join(out))

if __name__ == "__main__":
    {"run": cmd_run, "pil": cmd_pil, "tj": cmd_tj, "corpus": cmd_corpus,
     "report": cmd_report}[sys.argv[1]](sys.argv[2:])
PYEOF

# --- setups --------------------------------------------------------------------
IMAGES=$((COUNT * EPOCHS))
SRC="datasetsrc location=$CORPUS shuffle=false num-epochs=$EPOCHS"
# One core: reading in the streaming thread beats handing each file to a
# reader thread (row a2 shows the difference).
SRC1="$SRC n-threads=0"
S_EPOCHS=$(( (IMAGES + TJ_SAMPLE - 1) / TJ_SAMPLE ))
MFS="multifilesrc location=$FLAT/%05d.jpg loop=true stop-index=$((COUNT - 1)) num-buffers=$IMAGES caps=image/jpeg"
JPEGDEC="jpegdec idct-method=islow"

# id | cores | label | command (word-split; no quoting inside)
declare -A CORES LABEL CMD
add() { CORES[$1]=$2; LABEL[$1]=$3; CMD[$1]=$4; }
add a  1 "(a) datasetsrc n-threads=0 ! imagedec n-threads=1" \
  "taskset -c 0 gst-launch-1.0 -q $SRC1 ! imagedec n-threads=1 ! fakesink"
add a2 1 "(a2) datasetsrc (2 reader threads) ! imagedec n-threads=1" \
  "taskset -c 0 gst-launch-1.0 -q $SRC ! imagedec n-threads=1 ! fakesink"
add s  1 "(s) (a) on the $TJ_SAMPLE tjbench sample files" \
  "taskset -c 0 gst-launch-1.0 -q datasetsrc location=$TJ_DATASET shuffle=false num-epochs=$S_EPOCHS n-threads=0 ! imagedec n-threads=1 ! fakesink"
add b  2 "(b) datasetsrc ! imagedec n-threads=2" \
  "${PIN2_TXT}gst-launch-1.0 -q $SRC ! imagedec n-threads=2 ! fakesink"
add c1 1 "(c) multifilesrc ! jpegdec (native I420)" \
  "taskset -c 0 gst-launch-1.0 -q $MFS ! $JPEGDEC ! fakesink"
add c2 1 "(c) multifilesrc ! jpegdec ! videoconvert ! RGB" \
  "taskset -c 0 gst-launch-1.0 -q $MFS ! $JPEGDEC ! videoconvert ! video/x-raw,format=RGB ! fakesink"
add d  1 "(d) tjbench decode-only, RGB ($TJ_SAMPLE-file sample)" \
  "taskset -c 0 tjbench FILE.jpg -rgb -benchtime 1 -warmup 0.5 -nowrite"
add d2 1 "(d2) libjpeg-turbo decode loop over the corpus, files in memory" \
  "taskset -c 0 $OUT/decode-loop $EPOCHS FLAT/*.jpg"
add d3 1 "(d3) decode loop over the $TJ_SAMPLE tjbench sample files in turn" \
  "taskset -c 0 $OUT/decode-loop $S_EPOCHS SAMPLE"
# As many images as (d3), in runs of 200 decodes of one file.
D4_REPEAT=200
D4_PASSES=$(( (S_EPOCHS + D4_REPEAT - 1) / D4_REPEAT ))
add d4 1 "(d4) (d3) with each file decoded $D4_REPEAT times in a row, as tjbench does" \
  "taskset -c 0 $OUT/decode-loop -r $D4_REPEAT $D4_PASSES SAMPLE"
SAMPLE_SRC="datasetsrc location=$TJ_DATASET shuffle=false num-epochs=$S_EPOCHS n-threads=0"
add r  1 "(r) (s) ! augment: imagedec decodes only the crop box (decode-region, default)" \
  "taskset -c 0 gst-launch-1.0 -q $SAMPLE_SRC ! imagedec n-threads=1 ! augment n-threads=1 ! fakesink"
add r0 1 "(r0) (r) with imagedec decode-region=false (whole images)" \
  "taskset -c 0 gst-launch-1.0 -q $SAMPLE_SRC ! imagedec n-threads=1 decode-region=false ! augment n-threads=1 ! fakesink"
add d5 1 "(d5) (d3) decoding only a RandomResizedCrop box of each file" \
  "taskset -c 0 $OUT/decode-loop -c $S_EPOCHS SAMPLE"
add d6 1 "(d6) (d5) reading each file to its end (imagedec's first time)" \
  "taskset -c 0 $OUT/decode-loop -c -a $S_EPOCHS SAMPLE"
add e  1 "(e) PIL open+convert('RGB'), Python $($PY -c 'import platform; print(platform.python_version())'), Pillow $($PY -c 'import PIL; print(PIL.__version__)')" \
  "taskset -c 0 $PY $HELPER pil $FLAT $COUNT"
add f  1 "(f) (a) with imagedec min-short-side=256" \
  "taskset -c 0 gst-launch-1.0 -q $SRC1 ! imagedec n-threads=1 min-short-side=256 ! fakesink"
add f2 1 "(f2) (a) with imagedec min-short-side=256 scales=all" \
  "taskset -c 0 gst-launch-1.0 -q $SRC1 ! imagedec n-threads=1 min-short-side=256 scales=all ! fakesink"
ORDER=(a a2 s r r0 b c1 c2 d d2 d3 d4 d5 d6 e f f2)
# Setups whose output is checked over one epoch of the whole corpus.
GST_SETUPS=(a a2 b c1 c2 f f2)

prewarm() { cat "$CORPUS"/class*/*.jpg >/dev/null; }

# --- check the outputs (untimed) ------------------------------------------------
# One epoch through each GStreamer setup with a verbose fakesink: the number of
# buffers must equal the corpus size, the run must end cleanly with no
# warning, and the bytes per buffer give the decoded size.
log "checking each pipeline's output ($COUNT images, untimed)"
prewarm
declare -A CHECK
for id in "${GST_SETUPS[@]}"; do
  c=${CMD[$id]}
  c=${c/-q /-v }
  c=${c/num-epochs=$EPOCHS/num-epochs=1}
  c=${c/num-buffers=$IMAGES/num-buffers=$COUNT}
  c=${c%fakesink}"fakesink silent=false"
  # shellcheck disable=SC2086
  set +e; $c >"$OUT/logs/check-$id.log" 2>&1; rc=$?; set -e
  n=$(grep -c 'last-message = chain' "$OUT/logs/check-$id.log" || true)
  bytes=$(grep -o 'last-message = chain[^(]*([^)]*) (\([0-9]*\) bytes' "$OUT/logs/check-$id.log" |
          sed 's/.*(\([0-9]*\) bytes$/\1/' | awk '{s += $1} END {printf "%.0f", s}')
  warn=$(grep -c -E '^(WARNING|ERROR)' "$OUT/logs/check-$id.log" || true)
  CHECK[$id]="rc=$rc buffers=$n/$COUNT warnings+errors=$warn mean-output-bytes=$((n > 0 ? bytes / n : 0))"
  log "  $id: ${CHECK[$id]}"
  [ "$rc" = 0 ] || die "setup $id failed (rc $rc), see $OUT/logs/check-$id.log"
  [ "$n" = "$COUNT" ] || die "setup $id pushed $n buffers for $COUNT images, see $OUT/logs/check-$id.log"
  [ "$warn" = 0 ] || log "  WARNING: setup $id printed warnings or errors, see $OUT/logs/check-$id.log"
done

# (r) and (r0) must give the same bytes: one epoch of the sample each.
for id in r r0; do
  c=${CMD[$id]}
  c=${c/num-epochs=$S_EPOCHS/num-epochs=1}
  c=${c%fakesink}"filesink location=$OUT/check-$id.bin"
  # shellcheck disable=SC2086
  $c >"$OUT/logs/check-$id.log" 2>&1 || die "setup $id failed, see $OUT/logs/check-$id.log"
done
R_SUM=$(md5sum <"$OUT/check-r.bin" | cut -d' ' -f1)
R_BYTES=$(stat -c %s "$OUT/check-r.bin")
[ "$R_SUM" = "$(md5sum <"$OUT/check-r0.bin" | cut -d' ' -f1)" ] || die "(r) and (r0) gave different images"
[ "$R_BYTES" = $((TJ_SAMPLE * 224 * 224 * 3)) ] || die "(r) gave $R_BYTES bytes for $TJ_SAMPLE images"
log "  r, r0: the same $R_BYTES bytes (md5 $R_SUM)"

# Fixed cost of one gst-launch run (process start, registry, dataset listing,
# pipeline set-up and teardown): the same pipeline over a single image.
STARTUP_CMD="taskset -c 0 gst-launch-1.0 -q datasetsrc location=$CORPUS shuffle=false num-samples=1 ! imagedec n-threads=1 ! fakesink"

# --- timed runs -----------------------------------------------------------------
RESULTS=$OUT/results.tsv
: >"$RESULTS"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
T_START=$(date +%s)
STARTUP=()
for ((run = 1; run <= RUNS; run++)); do
  log "run $run/$RUNS"
  prewarm
  # shellcheck disable=SC2086
  read -r w _ rc < <("$PY" "$HELPER" run "$OUT/logs/startup-$run.log" $STARTUP_CMD) || die "could not time the start-up probe"
  [ "$rc" = 0 ] || die "start-up probe failed, see $OUT/logs/startup-$run.log"
  STARTUP+=("$w")
  for id in "${ORDER[@]}"; do
    case $id in
      d) read -r w cpu n < <("$PY" "$HELPER" tj "$TJ_LIST") || die "tjbench failed" ;;
      d2) read -r n w cpu < <(taskset -c 0 "$OUT/decode-loop" "$EPOCHS" "$FLAT"/*.jpg) || die "decode loop failed" ;;
      d3) # shellcheck disable=SC2046
          read -r n w cpu < <(taskset -c 0 "$OUT/decode-loop" "$S_EPOCHS" $(cat "$TJ_LIST")) || die "decode loop failed" ;;
      d5) # shellcheck disable=SC2046
          read -r n w cpu < <(taskset -c 0 "$OUT/decode-loop" -c "$S_EPOCHS" $(cat "$TJ_LIST")) || die "decode loop failed" ;;
      d6) # shellcheck disable=SC2046
          read -r n w cpu < <(taskset -c 0 "$OUT/decode-loop" -c -a "$S_EPOCHS" $(cat "$TJ_LIST")) || die "decode loop failed" ;;
      d4) # shellcheck disable=SC2046
          read -r n w cpu < <(taskset -c 0 "$OUT/decode-loop" -r "$D4_REPEAT" "$D4_PASSES" $(cat "$TJ_LIST")) || die "decode loop failed" ;;
      e) read -r w cpu n < <(taskset -c 0 "$PY" "$HELPER" pil "$FLAT" "$COUNT") || die "PIL benchmark failed" ;;
      *)
        # shellcheck disable=SC2086
        read -r w cpu rc < <("$PY" "$HELPER" run "$OUT/logs/$id-$run.log" ${CMD[$id]}) || die "could not time setup $id"
        [ "$rc" = 0 ] || die "setup $id failed (rc $rc), see $OUT/logs/$id-$run.log"
        n=$IMAGES
        case $id in s | r | r0) n=$((S_EPOCHS * TJ_SAMPLE)) ;; esac ;;
    esac
    printf '%s\t%d\t%d\t%s\t%s\n' "$id" "$run" "$n" "$w" "$cpu" >>"$RESULTS"
    log "  $id: $(awk -v n="$n" -v w="$w" 'BEGIN {printf "%.0f images/s", n / w}')"
  done
done
T_END=$(date +%s)
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report ----------------------------------------------------------------------
META=$OUT/meta.json
{
  echo '{"setups": ['
  sep=
  for id in "${ORDER[@]}"; do
    label=${LABEL[$id]//\"/\\\"}
    printf '%s{"id": "%s", "cores": %d, "label": "%s"}\n' "$sep" "$id" "${CORES[$id]}" "$label"
    sep=,
  done
  echo ']}'
} >"$META"
TABLE=$("$PY" "$HELPER" report "$RESULTS" "$META")

read -r C_PX C_BYTES C_BPP < <("$PY" "$HELPER" corpus "$FLAT" "$COUNT")
read -r S_PX S_BYTES S_BPP < <("$PY" "$HELPER" corpus "$TJ_LIST")
STARTUP_MED=$(printf '%s\n' "${STARTUP[@]}" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
A_WALL=$(awk -F'\t' '$1 == "a" {print $4}' "$RESULTS" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')

CPU_MODEL=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
TURBO_VER=$(dpkg-query -W -f='${Version}' libturbojpeg0 2>/dev/null || pkg-config --modversion libturbojpeg 2>/dev/null || echo unknown)
GST_VER=$(gst-launch-1.0 --version | sed -n 's/^GStreamer //p' | head -1)
CC_VER=$(cc --version 2>/dev/null | head -1)
PER_RUN=$(( (T_END - T_START) / RUNS ))

REPORT=$(cat <<EOF
# Input stage: JPEG decode throughput

Generated by \`bench/input-stage.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC').

- Command: \`$CMDLINE\` ($RUNS interleaved runs per setup, about ${PER_RUN} s per round)
- CPU: $CPU_MODEL, $NCPU cores ($(uname -m), Linux $(uname -r))
- libjpeg-turbo $TURBO_VER (Debian package libturbojpeg0; tjbench from libjpeg-turbo-progs)
- GStreamer $GST_VER; gst-train built with \`meson setup build-bench --buildtype=release\` ($CC_VER)
- Load average before / after the timed runs: $LOAD_BEFORE / $LOAD_AFTER

## Corpus

$COUNT JPEGs made by \`bench/make-corpus.py --count $COUNT\` from the photographs of Debian's
mate-backgrounds: random crops, short side 300-400 px, aspect 3:4..4:3, PIL quality 90, 4:2:0,
baseline, 10 class folders. Mean $C_PX pixels and $C_BYTES bytes per image ($C_BPP bits per pixel).
The tjbench sample ($TJ_SAMPLE files, evenly spaced) averages $S_PX pixels and $S_BYTES bytes ($S_BPP bits per pixel).
The source photographs are smooth (macro shots with soft backgrounds), so the files are smaller
than typical ImageNet JPEGs (about 110 kB), which makes entropy decoding a smaller share here.

## Results

Higher is better. Each GStreamer run decodes the corpus $EPOCHS times ($IMAGES images) in one
\`gst-launch-1.0\` process; its wall time includes process start-up, registry load and pipeline
set-up, about $(awk -v s="$STARTUP_MED" 'BEGIN {printf "%.0f", s * 1000}') ms per run (median
run of the same pipeline over one image), i.e. $(awk -v s="$STARTUP_MED" -v a="$A_WALL" 'BEGIN {printf "%.1f", 100 * s / a}')% of a run of (a); it is not subtracted.
The ratio columns compare images per second per core against the tjbench and
jpegdec->RGB rows. tjbench decodes only its $TJ_SAMPLE sample files, so the like-for-like
comparison with it is row (s), our pipeline over exactly those files. tjbench decodes one file
over and over, which is worth about 15% on its own (rows d3 and d4, and "Where the decode time
goes" below); row (d2) decodes every corpus
file in turn with nothing else around it, the cost of decoding alone for the corpus of (a). "images per CPU-second" divides by user+system CPU time
of the process instead of wall time, which is less sensitive to other load on the machine.

$TABLE

## Setups

Page cache warmed (every file read once) before each round; runs of all setups interleaved;
\`GST_REGISTRY\` private to bench/out; \`CORPUS\` = \`${CORPUS#"$ROOT"/}\`, \`FLAT\` = \`${FLAT#"$ROOT"/}\`
(symbolic links \`00000.jpg\`.. to the corpus files, for multifilesrc).

| Row | Command |
|---|---|
| (a) | \`taskset -c 0 gst-launch-1.0 datasetsrc location=CORPUS shuffle=false num-epochs=$EPOCHS n-threads=0 ! imagedec n-threads=1 ! fakesink\` |
| (a2) | (a) without \`n-threads=0\` on datasetsrc: two reader threads share the one core with the decoder |
| (s) | (a) with \`location=\` a list file of the $TJ_SAMPLE tjbench sample files (the corpus files themselves, not their links in FLAT) and \`num-epochs=$S_EPOCHS\` |
| (b) | \`${PIN2_TXT}gst-launch-1.0 datasetsrc location=CORPUS shuffle=false num-epochs=$EPOCHS ! imagedec n-threads=2 ! fakesink\` (all $([ -n "$PIN2_TXT" ] && echo 2 || echo "$NCPU") cores; per core = rate / 2) |
| (c) | \`taskset -c 0 gst-launch-1.0 multifilesrc location=FLAT/%05d.jpg loop=true stop-index=$((COUNT - 1)) num-buffers=$IMAGES caps=image/jpeg ! jpegdec idct-method=islow ! fakesink\`, and the same with \`! videoconvert ! video/x-raw,format=RGB ! fakesink\` |
| (d) | \`taskset -c 0 tjbench FILE.jpg -rgb -benchtime 1 -warmup 0.5 -nowrite\` for each sample file; images/s = files / sum(1 / reported fps) |
| (d2) | \`taskset -c 0 bench/decode-loop $EPOCHS FLAT/*.jpg\` (built from bench/decode-loop.c with \`cc -O2\`): every corpus file loaded into memory first, then $EPOCHS passes of \`tjDecompressHeader3\` + \`tjDecompress2\` to RGB into one reused buffer; the cost of decoding alone, visiting files as a pipeline does |
| (d3) | \`taskset -c 0 bench/decode-loop $S_EPOCHS SAMPLE\`: (d2) over the $TJ_SAMPLE tjbench sample files in turn, as many images as (s) |
| (d4) | \`taskset -c 0 bench/decode-loop -r $D4_REPEAT $D4_PASSES SAMPLE\`: (d3) with each file decoded $D4_REPEAT times in a row before the next, the order tjbench times |
| (r) | \`taskset -c 0 gst-launch-1.0 datasetsrc location=SAMPLE-LIST shuffle=false num-epochs=$S_EPOCHS n-threads=0 ! imagedec n-threads=1 ! augment n-threads=1 ! fakesink\`: (s) followed by augment's defaults (RandomResizedCrop to 224x224, scale 0.08-1, ratio 3/4-4/3, flip 0.5); imagedec asks augment for each image's crop box and decodes only that (decode-region=true, the default) |
| (r0) | (r) with \`imagedec n-threads=1 decode-region=false\`: the same output bytes (checked below), from whole decodes |
| (d5) | \`taskset -c 0 bench/decode-loop -c $S_EPOCHS SAMPLE\`: (d3), but each decode is of one RandomResizedCrop box (augment's defaults, drawn by augment's code from one seeded stream) with imagedec's region decoder (\`gst_train_jpeg_decode_region\`, libjpeg-turbo's \`jpeg_crop_scanline\` and \`jpeg_skip_scanlines\`), stopping after the box as imagedec does from a file's second time in a run |
| (d6) | \`taskset -c 0 bench/decode-loop -c -a $S_EPOCHS SAMPLE\`: (d5) reading each file to its end (entropy decoding only below the box), as imagedec does the first time it sees a file |
| (e) | \`taskset -c 0 /usr/bin/python3\`: for each file, read the bytes, \`Image.open(io.BytesIO(data)).convert('RGB')\`, \`.load()\`; one pass over the corpus |
| (f) | (a) with \`imagedec n-threads=1 min-short-side=256\` (default \`scales=fast\`: 1/8, 1/4, 1/2 or 1) |
| (f2) | (f) with \`scales=all\` (any eighth) |

jpegdec runs with \`idct-method=islow\` (its default is ifast), the same IDCT as imagedec and tjbench.
Its native output is I420 (no colour conversion or chroma upsampling), so the RGB row is the
like-for-like comparison with imagedec, which outputs RGB.
With min-short-side=256 this corpus (short sides 300-400) is decoded at full size under the
default scales=fast (1/2 would go below 256), and at the 7/8 or 3/4 scale with scales=all;
libjpeg-turbo has SIMD inverse DCTs on x86 only for the 1/1, 1/2 and 1/4 scales, so those
eighths are slower than a full-size decode even though they output fewer pixels (row f2).

## Where the decode time goes

Issue 17 asks for 0.95x of tjbench's decode-only rate on the same files; 0.85x was
recorded for row (s). Measured on 2026-12-01 on this machine (AMD EPYC, 2 cores, load 2-5
from other work; \`perf record -F 4000\` of row (s)'s pipeline over 400 epochs of the sample,
12000 images, \`taskset -c 0\`; this VM has no hardware counters, so cpu-clock samples):

| Where the pipeline's CPU time goes | share |
|---|---:|
| libjpeg-turbo (\`tjDecompress2\`, called by imagedec) | 93.7% |
| kernel: datasetsrc's open, read (the copy out of the page cache) and close of each file | 2.8% |
| GStreamer, GLib, GObject (buffers, metas, pad pushes, fakesink) | 1.3% |
| libc (malloc, free; libjpeg-turbo's own memset of coefficient blocks) | 1.1% |
| \`__tls_get_addr\` (libjpeg-turbo, the same share in the bare loop) | 0.5% |
| gst-train's own code (imagedec, datasetsrc, jpeg-decode.c) | 0.4% |

- imagedec's decode costs what libjpeg-turbo's does: the libjpeg-turbo samples per image are
  the same in the pipeline as in the bare loop (d3) within 2% (429 and 438 us per image under
  perf). imagedec already uses the TurboJPEG API, decodes straight into the output buffer
  (no copy, no colour conversion of ours), reuses a cache-warm output block from its
  recycler (it reused a TurboJPEG handle per thread then; since the ninth session each image
  gets a decoder of its own, see docs/reliability.md, at no measurable cost); the second header parse (TurboJPEG reads the
  header again in \`tjDecompress2\`) costs 1.9 us per image, 0.5%.
- Of libjpeg-turbo's time, entropy decoding and the inverse DCT take 85%
  (\`tjDecompressToYUV2\`: 351 of 412 us per image over the sample), chroma upsampling and
  colour conversion the rest (\`tjDecodeYUV\`: 55 us). Both are libjpeg-turbo's SIMD code;
  any exact replacement would have to beat it there.
- The rest of the pipeline is 6%: reading files (8 us per file: \`datasetsrc ! fakesink\`
  reads the 6000 files of (s) in 0.05 s), GStreamer's per-buffer work, start-up (10-20 ms).
  Row (s) used to list the sample through the symbolic links of FLAT; resolving a link is a
  second path walk per file (\`__d_lookup_rcu\` 1.5% of the samples, 0.14% now that the
  list names the corpus files, as row (a) reads them).
- The gap to tjbench is tjbench's order, not decoding: it times one file decoded over and
  over. The bare loop over the sample gets faster the more times in a row it decodes each
  file (images/s in three runs: once 2367-2502, twice 2505-2583, 10 times 2669-2779, 100
  times 2870-2899), while tjbench gave 2541-2939 in the same minutes. It is not the caches:
  two files decoded alternately, both in L1/L2, run at 2153-2385 against 2430-2973 for the
  same two in runs of 100. The likely cause is the branch predictor learning the Huffman
  decoding branches of one bitstream repeated (no counters here to confirm it). A pipeline
  visits each file once per epoch, so no pipeline that decodes each file once with
  libjpeg-turbo 2.1.5 reaches 0.95x tjbench on these files: the bare loop itself is at
  about 0.86x (row d3 against d).
  The figure that measures our decode path is (s) against (d3).
- Full runs of this script on 2026-12-01 (the same plugin code), like for like on the
  sample: at 10:33 UTC (load 3.0-5.0) (s) ran at 0.80x tjbench and 0.93x (d3) per wall-second,
  0.94x per CPU-second, (d3) at 0.86x and (d4) at 0.98x tjbench; at 10:50 UTC (load
  3.8-7.3, the table above) other work halved most wall-clock rates on core 0, and per
  CPU-second (s) ran at 0.91x (d3) ((s) 2263, (d3) 2477, (d4) 2842 images per CPU-second).
  Row (a) against (d2), the whole corpus, per CPU-second: 0.89x-0.93x. At 19:33 UTC, on a
  quiet machine (load 1.0-1.1, the table at the top, with the region rows added and the
  same decode code), (s) ran at 1.01x (d3) and 0.81x tjbench, (d3) at 0.80x and (d4) at
  0.96x tjbench, and (a) at 0.88x (d2): the pipeline's own share is within the noise once
  other sessions leave the core alone.
- Changed: imagedec zeroes the 1-3 bytes that pad each row with stores instead of a
  \`memset()\` call per row (the call was about 0.7% of the samples; A/B of (s) per
  CPU-second, five interleaved runs: 2326 before, 2335 after, within noise), and row (s)
  reads the corpus files instead of links.

## Decoding only the crop (decode-region)

torchvision's RandomResizedCrop cuts the box out first and resizes the box
alone, so augment (crop=random-resized, the default) reads nothing of the
image outside its box. Before each decode, imagedec asks augment, when the
two are linked directly, for the sample's box (a custom query; augment's
draws depend only on the seed and the sample), and decodes that rectangle
alone: \`jpeg_crop_scanline\` for the columns (moved left to an iMCU boundary
and widened by 8 pixels each side, because chroma upsampling treats the
edges of a cropped decode as image edges) and \`jpeg_skip_scanlines\` for the
rows above (entropy decoding only); the first time a file comes in a run
it also reads the rows below (entropy decoding only, so that a file damaged
anywhere fails as its whole decode does), and after that it stops after the
box's last row. The pixels are those of
a whole decode (tests: every JPEG kind and DCT scale, pipelines, and
fuzz-jpeg compares every rectangle it decodes with the whole image); rows
(r) and (r0) give the same bytes (the output checks at the end).

- What goes: the inverse DCT, upsampling and colour conversion of every
  pixel outside the box, and, from a file's second time in a run, all
  decoding below the box. What stays: the entropy decoding of every row
  down to the box's last (a baseline JPEG without restart markers must be
  read bit by bit up to there), and the first time, of the rest too. Row
  (d5) is the steady state (from the second epoch), row (d6) the first
  time. So the saving is larger on files
  with few bits per pixel, like this corpus (1.5), than on ImageNet's
  (nearer 3; not measured here).
- Measured on 2026-12-01, two full runs of this script (the table at the
  top is the second):
  - 19:33-19:50 UTC (load 1.0-1.1), before imagedec read a file to its end
    the first time: the region decodes (d5) ran at 1.26x the whole-image
    loop over the same files (d3) and 1.02x tjbench (d); in the training
    pipeline, (r) against (r0), 1.19x (136 us less per image).
  - 20:42-20:51 UTC (load 0.8-1.0), the code as it is: (d5) at 1.18x (d3)
    and 1.12x tjbench; the first time (d6) at 1.03x (d3) and 0.98x tjbench;
    (r) against (r0) 1.11x (r reads each of the 30 files to its end once, in
    its first of 200 epochs).
  - The machine's speed drifts by 10-20% within minutes: tjbench against
    the loop (d3) was 0.80x in the first run and 0.95x in the second.
    Ratios between rows of one run are what the runs agree on.
  The figure for the pipeline counts, besides the decode, what augment
  gains from a smaller, cache-warm input; (d5) is the decode alone.
- The default training pipeline of \`bench/input-pipeline.py\`
  (\`datasetsrc ! imagedec ! augment ! batcher\`, default properties, one
  core), 12 pairs of runs alternating on and off (2000 images each,
  20:00 UTC): on ran 1.14x faster (median of the pairs; every pair above
  1, 1.04-1.38). The same machine's speed drifts by 10-20% within minutes,
  which is why the pairs, not medians of separate rows, are quoted.
- The cost: imagedec's streaming thread reads each header once more
  (TurboJPEG, about 2 us) and sends the query; augment draws each box twice
  (for the query and for the image). A few microseconds of serial work per
  image.
- Where it is off: anything between imagedec and augment (queue, echo, tee,
  a converter), crop=center or crop=resize, GRAY8 output, CMYK/YCCK files,
  buffers without a sample meta; \`imagedec decode-region=false\` turns it
  off.

**Issue 17's decode goal** (0.95x tjbench's decode-only rate on the same
files). Like for like, decoding whole images, the pipeline (s) ran at
0.81x and 0.74x tjbench in the two runs above, 1.01x and 0.78x the bare
libjpeg-turbo loop over the same files (d3), and the loop itself at 0.80x
and 0.95x tjbench: the bound explained above (tjbench times one file over
and over), and the machine's drift. What a training pipeline decodes is the
crop: that decode (d5) ran at 1.02x and 1.12x tjbench's whole-image rate,
and 0.98x in a file's first epoch (d6, second run). Both statements hold;
which one the goal meant is for planning to say.

Output checks (one untimed epoch per pipeline, verbose fakesink):

$(for id in "${GST_SETUPS[@]}"; do echo "- ($id) ${CHECK[$id]}"; done)
- (r) and (r0), one epoch of the sample each to a file: the same $R_BYTES bytes ($TJ_SAMPLE images of 224x224 RGB), md5 $R_SUM
EOF
)

mkdir -p "$(dirname "$OUTPUT")"
printf '%s\n' "$REPORT" >"$OUTPUT"
printf '%s\n' "$REPORT"
log "report written to ${OUTPUT#"$ROOT"/}"
