"""Every number a verdict or recommendation depends on, with where it comes from.

Published tools draw the "input-bound" line between 5% and 30% of step time spent waiting for
data; fastload does not have to rely on that line alone, because it also measures the speedup a
free input pipeline would give (the ``synthetic`` run).
"""

from __future__ import annotations

# -- Is the input pipeline the limit? ----------------------------------------------------------

# Data-wait fraction of the real run at or above which training is input-bound: TraceML's
# critical level and loadtune's input-bound line (20%).
WAIT_INPUT_BOUND = 0.20
# Data-wait fraction below which the input pipeline is not a problem: TraceML's warning level.
WAIT_COMPUTE_BOUND = 0.10
# Speedup ceiling (synthetic / real throughput) at or above which the input pipeline is the
# limit: a free pipeline would make training 1.5x faster, far outside run-to-run noise.
CEILING_INPUT_BOUND = 1.5
# A wait this long implies a ceiling of at least CEILING_INPUT_BOUND (1 / (1 - wait) = 1.5x): the
# wait alone shows the input pipeline is the limit even when the measured ceiling came out lower.
WAIT_CLEARLY_INPUT = 1 - 1 / CEILING_INPUT_BOUND
# Ceiling below which a free input pipeline would not help: run-to-run throughput on a shared
# 2-core machine varies by up to ~10%, so smaller gains are not distinguishable from noise.
CEILING_COMPUTE_BOUND = 1.15
# A synthetic run this much slower than the real one cannot be noise on a quiet machine: free
# inputs cannot slow training, so the comparison measured something else (below it, a disturbed
# run's ceiling under 1 beyond the runs' noise is broken too).
CEILING_BROKEN = 0.8

# The step itself (time outside the data wait) ran this much slower in the real run than with free
# inputs: the loading processes take CPU (or memory bandwidth) from the training step. On a
# CPU-only machine this, not the wait, is how an input pipeline slows training. A smaller slowdown
# counts too when it clears both the real and synthetic runs' noise and CEILING_COMPUTE_BOUND.
CONTENTION_SIGNIFICANT = 1.3
# With every core busy beside the loaders, the training process had this much more CPU with free
# inputs than beside them: the loaders took that CPU from the step. A process's CPU share over a run
# varies far less between runs than its step's median time (on Hugging Face's image-classification
# shape, 1.18-1.21x across four pairs of runs whose steps differed 1.09-1.65x), so the line is the
# compute-bound one, not the step's noise.
CPU_REGAINED_SIGNIFICANT = CEILING_COMPUTE_BOUND
# Loading processes on a CPU (or waiting for one) less than this share of the time cannot have
# slowed the step: a slower step beside them is the step's own run-to-run variation.
LOADER_NEARLY_IDLE = 0.05

# -- Why is it the limit? ----------------------------------------------------------------------

# no-aug / real throughput at or above which random augmentation is a cause in its own right
# (a quarter more throughput with augmentation off; well outside noise).
AUG_SPEEDUP_SIGNIFICANT = 1.25
# Share of the loading processes' time spent on a CPU or runnable-waiting for one, at or above
# which loading is CPU work (decode, augmentation, collate).
LOADER_BUSY = 0.60
# ...at or below which the loading processes mostly sleep: they wait on storage or latency.
LOADER_IDLE = 0.35
# System-wide CPU busy fraction at which every core is taken: published tools use 80-90%.
CPU_SATURATED = 0.85
# System iowait fraction worth quoting as evidence of storage stalls.
IOWAIT_NOTABLE = 0.05
# Storage read rate worth quoting as evidence (bytes/s); below it the data came from the page cache.
READ_RATE_NOTABLE = 1e6
# Share of the loading processes' samples finding them blocked on storage (uninterruptible sleep)
# at or above which reads cost them time. Below it, with little iowait, reads at any rate did not
# hold loading up: on full cores such reads are no evidence of storage.
LOADER_BLOCKED_NOTABLE = 0.10
# Device busy % below which a compute-bound CUDA run is limited by the host loop, not the GPU
# (the GPU idles half the time even with free inputs).
GPU_BUSY_LOW_PERCENT = 50.0
# A step this much faster with its batch already on the GPU (synthetic-device) than copied from host
# memory (synthetic) makes host-to-device copies a cause: they cost a quarter of the step.
TRANSFER_SIGNIFICANT = 1.3
# What a host-to-device copy moves at best: pinned memory over PCIe Gen5 x16 (~64 GB/s raw).
PCIE_PINNED_BYTES_PER_S = 50e9

# -- Confidence --------------------------------------------------------------------------------

CONFIDENCE_STRONG = 0.9  # both signals (wait and ceiling) agree, and the cause was measured
CONFIDENCE_ONE_SIGNAL = 0.7  # one signal clear, the other in between or missing
CONFIDENCE_HEDGED = 0.5  # both signals in between: a mixed case
CONFIDENCE_CAUSE_UNCLEAR = 0.75  # multiplier when the cause (cpu vs io) rests on weak evidence

# Share of the machine's CPU time taken by processes outside the run (other jobs on a shared
# machine) above which that run's throughput is not a fair comparison with the others: on two
# cores, 15% is a third of a core, several times the run-to-run noise of a quiet machine.
FOREIGN_LOAD_NOTABLE = 0.15
# Share of a virtual machine's CPU time its host held back during a run (steal: other guests, or
# the guest's CPU quota) above which the report says so. No process's load, and steady where a
# quota causes it (20% on a 2-vCPU guest whose loaders keep both cores busy): never measured again.
STEAL_NOTABLE = 0.10
# Confidence multiplier when a compared run was disturbed by such load.
CONFIDENCE_DISTURBED = 0.75

# -- Data quality ------------------------------------------------------------------------------

# Fewer steady-state batches than this: numbers are rough, and the report says so.
MIN_STEADY_BATCHES = 10
# The measuring limit a command's time is held to (``time_spent.limit_s``): one start of the script
# and this many steady batches of each mode compared, what a verdict needs at the least.
TIME_LIMIT_BATCHES = MIN_STEADY_BATCHES
# A mode stops before --max-batches once the standard error of its throughput estimate (read from
# consecutive rounds of one batch per worker) is within this share of it. Two runs of one setting
# differ by 10-25% on a busy 2-core machine (docs/benchmarks.md): more batches in each run cannot
# make a comparison between runs finer than that, while they cost a second each on a slow step.
SETTLE_PRECISION = 0.04
# ... and never before its window holds this many rounds of every worker (and MIN_STEADY_BATCHES).
SETTLE_ROUNDS = 4
# diagnose's real run stops once its estimate is within DECIDED_PRECISION after DECIDED_BATCHES
# steady batches: its ceiling is read against the verdict's lines only after the synthetic run, and
# where it lands within twice that error of one (1.15x, 1.5x), the pair is measured again; anywhere
# else no more batches could turn the verdict. The batches are twice the least a window may hold,
# which leaves the delivery pathologies a few rounds of stalls to read.
DECIDED_PRECISION = 0.10
DECIDED_BATCHES = 2 * MIN_STEADY_BATCHES
# ... nor before it has started as many epochs as its requested batches span, up to this many,
# where its first epoch's start-up took more than this share of an epoch's steady time.
SETTLE_EPOCHS = 2
SETTLE_STARTUP_SHARE = 0.05
# A real run whose first epoch ends within this share of its requested batches past them goes on
# to the next epoch's start: what an epoch costs besides its steps (start-up, the drain and the
# workers' shutdown at its end) is then measured over a whole epoch, not estimated from the start-up.
EPOCH_REACH_SHARE = 0.5
# Share of late sampler ticks above which CPU readings are called coarse.
LATE_TICKS_NOTABLE = 0.10

# -- Recommendations ---------------------------------------------------------------------------

# Worker count suggested for latency-bound loading when no sweep ran: enough concurrent reads to
# hide storage latency on most systems (the sweep measures the best value).
IO_WORKERS_SUGGESTED = 8
# Upper end of a worker count suggested for CPU-bound loading without a sweep.
CPU_WORKERS_CAP = 8
# Per-batch cost of receiving a batch from a worker process (pickling, shared-memory handoff,
# queues): about a millisecond for small batches. Loading faster than this is not worth moving
# to workers.
WORKER_HANDOFF_MS = 1.0

# -- num_workers sweeps ------------------------------------------------------------------------

# Smallest relative throughput difference a sweep treats as real. Paired runs of the same setting
# on a quiet machine differ by 2-5%; a point's own measured spread widens this when it is larger.
SWEEP_NOISE_FLOOR = 0.05
# A gain promised from two runs measured once each (the real run and a no-aug, cached or fix
# run) is divided by at least 1 + this: runs of one script differ from run to run by more than
# a window's own spread shows. Six diagnose runs of the augmentation example read its real run
# at 140-184 samples/s (±14%) with window spreads of 4-18%, so the ratio of two such runs is off
# by up to about √2 x 14%; plain training then realized 1.79x where one promise said 1.99x.
PROMISE_RUN_NOISE = 0.2
# ... a real run that waited so much that its verdict is decided (``settle.starved``) holds its
# estimate to PROMISE_RUN_NOISE, and to DECIDED_BATCHES, only until its window has taken this
# long; then it hands over from MIN_STEADY_BATCHES on. A loop whose workers stall
# (thread-oversubscription's took 3-11 s for one batch now and then) reached the 20% after 32
# batches over 31 s, and its 20 batches once took 30 s. Its promises are divided by its window's
# spread, which such stalls widen.
STARVED_WINDOW_S = 15.0
# Among settings this close to the best throughput, the fewest workers are recommended: they cost
# less memory and fewer processes for a difference no run can tell apart.
SWEEP_PREFER_FEWER_WITHIN = 0.03
# The best setting and the script's own are measured once more only while the best is less than
# this many times as fast: two runs of one setting differ by 10-25% on a busy machine, so no pair
# of single runs is off by a factor of two, and a second run of each would only confirm it.
SWEEP_CONFIRM_BELOW = 2.0
# ... unless either run's own window varied by more than this (half the range of its blocks'
# rates): a window held up by a stall every few batches (slow-samples: ±53-69% at the script's 4
# workers) lands far from the setting's rate in training, and a second run is what tells by how much.
SWEEP_CONFIRM_SPREAD = 0.3
# A setting whose run swung that much is measured again over this many times the batches: on
# slow-samples the script's 4 workers read 192 samples/s over 47 batches (±57%) and 274 over 197
# (±18%), where plain training runs 270.
SWEEP_SWING_WINDOW = 4
# Rungs in a row that must fail to improve before the climb stops: one flat rung can be noise.
SWEEP_PATIENCE = 2
# Extra settings measured between the best point and its neighbours once the climb has stopped.
SWEEP_REFINE_POINTS = 2
# Share of the memory available when the sweep starts that a setting's processes may use.
SWEEP_MEMORY_SHARE = 0.8
# A run's window crossed an epoch boundary that matters where its steps alone ran this much faster
# than the window: the epoch's start (its workers started again) and end are then its own part,
# left out where it is compared with a run that never reached an epoch boundary (free inputs).
EPOCH_BOUNDARY_NOTABLE = 0.02
# Workers started again every epoch count in the ceiling over whole epochs where their start-up is
# at least this share of an epoch (start-up and steps): the line an epoch boundary is held to.
RESTART_NOTABLE = EPOCH_BOUNDARY_NOTABLE
# A setting is advised over the script's own only where what its runs measured, less their noise,
# still promises this much: under it a user changes the script for a gain no run can show (Hugging
# Face's example: 1.06x and 1.10x measured at +-9%, plain runs 1.02x within their spread).
SWEEP_MIN_PROMISE = 1.05
# A measured num_workers gain below SWEEP_WEIGHED_GAIN that costs at least SWEEP_WEIGHED_MEMORY more
# memory is a trade, not a headline: its title says the memory, and measured advice without that
# cost comes first.
SWEEP_WEIGHED_GAIN = 1.2
SWEEP_WEIGHED_MEMORY = 2**30
# A setting past where returns end (the fewest workers the fastest does not beat beyond the noise)
# that gains less than SWEEP_WEIGHED_GAIN over it, for at least this share of the memory a
# setting's processes may use (SWEEP_MEMORY_SHARE of what was free), is not advised over it: a
# user pays memory the machine will miss for a gain no run can show. 8 GiB of a 2-core machine's
# 18 GiB is such a share; 2 GiB of a 125 GiB GPU host's is not, and there the faster is advised.
SWEEP_KNEE_MEMORY_SHARE = 0.1
# The default prefetch_factor of a DataLoader with workers: each worker holds this many batches,
# and at start-up all of them arrive at once (they are kept out of the measured window).
DEFAULT_PREFETCH_FACTOR = 2
# A sweep point measures at least this many batches per worker, so every worker delivers several
# times within the window (workers deliver in bursts, one batch each).
SWEEP_ROUNDS = 3

# Seconds the main process takes to start one DataLoader worker, where a run did not measure it
# (its start-up, less its first batch, over its workers: 15-20 ms on the 2-core machine).
WORKER_START_S = 0.02
# Seconds an iterator takes, at an epoch's end, to shut down each of its workers (with the last
# batch's step, 0.12-0.14 s for 26 workers and 0.06-0.07 s for 13 on the 2-core machine).
WORKER_STOP_S = 0.005
# A setting whose epoch leaves no steady window is measured over this many whole epochs.
SWEEP_WHOLE_EPOCHS = 3
# A setting measured only inside the script's first epoch, beside others measured after it, is
# measured again after it only where the comparison could turn on it: within this factor of the
# fastest setting measured after it. The first epoch's workers ran up to a fifth slower than later
# epochs' (docs/benchmarks.md); a wider gap stands, and the report's caveat names the setting.
FIRST_EPOCH_MARGIN = 1.5
# Settings a sweep that starts from a prediction measures at most, besides the script's own: the
# predicted best and its neighbours, and a few more while the measured points keep rising or the
# loop still waits beside idle cores. Four reach the best setting of a 128-core host's curve in
# the model of scripts/simulate_search.py (docs/sweeps.md).
PREDICT_MAX_SETTINGS = 4

# -- Recommendation rules that rest on the breakdown, the batch and the epochs --------------------

# A num_workers setting that a sweep measured at least this much faster than the script's own
# (beyond the noise) confirms that the input pipeline is the limit, whatever the ceiling says:
# input then costs at least a quarter of each step. Same level as CONTENTION_SIGNIFICANT.
SWEEP_CONFIRMS_INPUT = 1.3

# Loading processes busy on a CPU, but at least this share of their CPU time in the kernel while
# the run reads at least READ_RATE_NOTABLE from storage: the CPU work is reading (system calls,
# copying pages from fast storage), so the pipeline is bound by its reads, not by decoding.
KERNEL_READS_SHARE = 0.5

# Share of a sample's loading time at or above which one part "dominates" (read/decode for RAM
# caching, augmentation for moving it to the GPU).
BREAKDOWN_DOMINANT = 0.5
# A decoded dataset is worth caching in RAM when it needs at most this share of the free memory.
RAM_CACHE_SHARE = 0.5
# The batches' worth of samples a cached run decodes past its warm-up before its first batch: the
# least a window may hold; a longer run serves them again, from memory as fast. Each costs a real
# batch's reading and decoding, which the verdict waits for: main-process-decode's cached run took
# 1.25-1.45 s with 10, 1.53-1.87 s with 20, its rate within the runs' spread (three of each,
# alternated, 2 cores).
CACHE_FILL_BATCHES = MIN_STEADY_BATCHES
# A resize whose input has at least this many times the pixels of the batch's images is resizing
# large images: doing it once, offline, saves decoding and resizing them every epoch.
RESIZE_LARGE_FACTOR = 4.0
# Per-epoch worker start-up at or above this share of an epoch's loading time is worth keeping
# the workers alive between epochs (persistent_workers=True).
STARTUP_NOTABLE_SHARE = 0.05
# Per-epoch worker start-up at or above this share of the training time makes it the verdict: the
# loop waits for new workers as long as an input-bound loop waits for data (WAIT_INPUT_BOUND).
# It takes at least two measured epochs to show that start-up recurs.
RESTART_INPUT_BOUND = 0.20
RESTART_MIN_EPOCHS = 2
# Waits are spiky when the 90th-percentile wait is this many times the median (and workers idle):
# a deeper prefetch queue absorbs the spikes.
WAIT_SPIKY_RATIO = 4.0
# ...and the spikes are worth it only from this many milliseconds on,
WAIT_SPIKE_MIN_MS = 2.0
# ...and only when the spikes (p90 - median) are at least this share of a step: spikes of a few
# milliseconds beside a step of a second cannot change throughput beyond noise.
WAIT_SPIKE_STEP_SHARE = 0.05
# Datasets whose items are slices of tensors already in memory: workers only add handoff cost.
IN_MEMORY_DATASETS = frozenset({"TensorDataset", "StackDataset"})

# The host sampler stretched its interval this many times the one asked for (a large process tree,
# kept within its CPU budget): the report says its CPU figures are coarser.
SAMPLING_STRETCH_NOTABLE = 1.5

# Data-parallel jobs. In a job whose ranks meet at every step's all-reduce, one rank's slow input
# pipeline shows as its own data wait while the others wait inside their step: a rank is the
# straggler when its data-wait fraction exceeds the others' median by STRAGGLER_WAIT_GAP (absolute)
# and is at least STRAGGLER_WAIT_RATIO times it.
STRAGGLER_WAIT_GAP = 0.15
STRAGGLER_WAIT_RATIO = 2.0
# A rank whose own step is slow: the others finish theirs first and wait for it, blocked in the
# all-reduce. It is the straggler when the loop's busy time per step (on a CPU or runnable, outside
# the data wait) is at least STRAGGLER_STEP_RATIO times the other ranks' median and beyond their
# spread (above every other rank's 90th percentile).
STRAGGLER_STEP_RATIO = 1.3
# Ranks that never meet (no process group) each run at their own pace: the slowest is a straggler
# when the others' median throughput exceeds its own by this much (or the runs' spread, if larger).
STRAGGLER_THROUGHPUT_GAP = 0.10

# --baseline: the noise two runs allow (their throughput spreads added) beyond which no regression
# can be told from it. Spreads within a run are a few percent (SETTLE_PRECISION); two runs of one
# setting differ by 10-25% on a busy 2-core machine; past half the throughput a report is too
# unsteady to pass a change as "inside the noise", so the gate says it cannot judge.
GATE_MAX_NOISE = 0.5

# Pathologies: named failures and slowdowns of the input pipeline, found in the real run.
# Slow samples (head-of-line blocking): the loop waits at least PATHOLOGY_WAIT_NOTABLE of its time,
# and its stalls (waits at least SLOW_TAIL_RATIO times the median, SLOW_TAIL_MIN_MS long, and a round
# of steps: num_workers times the median step, the time each worker has to make a batch), at
# most SLOW_TAIL_MAX_BATCHES of the batches, hold at least SLOW_TAIL_SHARE of that wait: a few
# batches stall the loop, the rest are ready. At least SLOW_TAIL_MIN_STALLS stalls: one is a hiccup.
PATHOLOGY_WAIT_NOTABLE = 0.10
SLOW_TAIL_MAX_BATCHES = 0.25
SLOW_TAIL_SHARE = 0.60
SLOW_TAIL_RATIO = 10.0
SLOW_TAIL_MIN_MS = 50.0
SLOW_TAIL_MIN_STALLS = 2
# ...and behind most stalls one of the other workers' next batches was ready (a wait of at most
# SLOW_TAIL_READY_RATIO times the median, or SLOW_TAIL_READY_MS): it was held up, not slow itself.
SLOW_TAIL_READY_RATIO = 2.0
SLOW_TAIL_READY_MS = 1.0
# ...unless the stalls recur a round apart (num_workers batches) in at least LOCKSTEP_ROUNDS of the
# rounds measured: workers that start together finish together, and the loop waits once a round for
# the first of them, every round alike (a GPU-fast step beside CPU-bound workers). in_order=False
# cannot help there: every batch of the round is equally late. Slow samples at the most stalls the
# rule allows (SLOW_TAIL_MAX_BATCHES) fall a round apart in under 0.42 of the rounds (4 workers).
LOCKSTEP_ROUNDS = 0.5
# Idle workers: one worker delivered at least this share of the measured batches (of at least
# IDLE_WORKERS_MIN_BATCHES), where an even share would be 1/num_workers.
IDLE_WORKERS_SHARE = 0.90
IDLE_WORKERS_MIN_BATCHES = 10
# Duplicate samples: at least this share of an IterableDataset's measured batches repeat a batch
# already delivered (first and last samples byte for byte), and at least DUPLICATES_MIN of them.
DUPLICATES_SHARE = 0.20
DUPLICATES_MIN = 2
# Thread oversubscription: a worker thread computes when it takes at least this share of a core;
# workers oversubscribe when most of them run more than one computing thread and all their
# computing threads (the main process's loop counted as one) outnumber the cores.
THREAD_BUSY_CORE = 0.10
# ... read over at least this long: a thread's CPU time moves in clock ticks (10 ms), and one tick
# over half a second is 2% of a core, where over a tenth of a second it alone is the line.
THREAD_READ_MIN_S = 0.5
# Memory growth: a worker's unique memory grows by at least MEMORY_GROWTH_MIN_BYTES after warm-up,
# keeping at least MEMORY_GROWTH_RETAINED of the pages it faulted in (copy-on-write keeps them all; a
# buffer mapped and freed every batch keeps none) while its faults grew steadily (a straight line
# explains MEMORY_GROWTH_FIT of them); it matters when the growth projected to the end of an epoch,
# times the workers, reaches MEMORY_GROWTH_NOTABLE of the memory available.
MEMORY_GROWTH_FIT = 0.9
MEMORY_GROWTH_RETAINED = 0.5
MEMORY_GROWTH_MIN_BYTES = 4 * 2**20
MEMORY_GROWTH_NOTABLE = 0.05
# Shared memory: batches in flight (batch bytes x prefetch_factor x workers x local ranks) past
# this share of /dev/shm leave too little room (pinned copies, a second loader, other jobs).
SHM_NOTABLE = 0.5
# File descriptors: open descriptors in the main process at this share of the soft limit.
FDS_NOTABLE = 0.5
# A recommendation that costs more memory than this share of what is available is not advised as is.
MEMORY_COST_MAX = 0.8
