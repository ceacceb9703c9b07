// Package fidelity judges whether a run of emulated fabric was faithful to
// the fabric it describes: whether the machine's own lateness (a worker of
// gswitchd that woke late, a pass that came late, a delay line that let
// frames out late, a shaper that lost line time) stayed small against the
// time one frame takes on the fastest link. A run at timescale K (package
// perf/timescale) divides every rate by K, so a frame takes K times longer
// and the same lateness counts K times less; this package says whether K
// was large enough.
//
// # Metrics
//
// gswitchd exports, per switch (names fixed here; gswitchd implements them):
//
//	gswitch_timescale                          gauge      K of the running switch (1 if none)
//	gswitch_worker_wake_late_seconds{worker}   histogram  how late each timed wake-up of a worker came
//	                                                      (wake time - deadline of its ppoll, >= 0)
//	gswitch_worker_pass_gap_seconds{worker}    histogram  gaps between consecutive passes of a worker
//	                                                      that did not sleep in between
//	gswitch_port_tx_late_seconds_total{port}   counter    line time a shaped port lost while frames waited
//	gswitch_port_credit_late_seconds_total{port} counter  the same for the port's credit meter
//	gswitch_port_delay_error_seconds{port}     histogram  how late frames left the port's delay line
//	                                                      against their due time
//	gswitch_port_rate_bytes_per_second{port}   gauge      the port's shaper rate, wall clock (0: unlimited);
//	                                                      the fabric's rate is this x K
//
// Every time in these metrics is wall time (this machine's clock). The
// histograms share one set of log-linear buckets, four per power of two
// from 1 µs to 2^22 µs (4.19 s) and +Inf (Bucket, BucketBounds): Bucket is
// cheap enough for a worker's every pass (no floating point, no
// allocation), so gswitchd uses it to count its observations, and
// PromBuckets to export the counts. Recorder is the histogram gswitchd
// keeps (one goroutine writes, any reads), Counts what it holds; its
// Histogram method makes a Switch's histograms from the switch's own
// counters, without a scrape (gswitchctl fidelity does).
//
// # Use
//
// Scrape takes a Snapshot of one or more switches (or Parse reads an
// exposition already fetched); Diff makes the Window between two
// snapshots; Evaluate judges the window against Bounds and returns a
// Verdict, one line by String, or JSON. gsperf takes the snapshots around
// a run (client and server -fidelity) and as a command of its own
// (gsperf fidelity), which experiment scripts call around a run.
//
// # What the verdict says
//
//   - lateness p99: the larger of the 99th percentiles of wake-up lateness
//     and pass gaps, over every worker of every switch (the histograms
//     merged), in wall time and in frame times of the fastest link;
//   - the fastest link's frame time: 1538 bytes on the wire (a full
//     Ethernet frame with preamble, FCS and gap) at the fastest port's wall
//     rate; ports without a rate are skipped;
//   - line time lost: the most any port lost, (tx_late + credit_late) over
//     the window's wall duration, in percent;
//   - delay error p99: the 99th percentile of the delay lines' lateness,
//     in frame times;
//   - VALID when each is within its bound (defaults: lateness p99 at most
//     one frame time, at most 1% of line time lost, delay error p99 at most
//     one frame time), INVALID with the reasons otherwise, or when there is
//     nothing to judge by (no lateness metrics, no port with a rate).
//
// The percentiles are read from histogram buckets by linear interpolation
// within the bucket that holds the rank (as Prometheus' histogram_quantile
// does): an estimate, off by at most one bucket's width, 19% (2^(1/4)).
package fidelity
