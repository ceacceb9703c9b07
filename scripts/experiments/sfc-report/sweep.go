package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// bloomPrefix names the cases of sfc-incast.sh's BLOOM sweep: SFC (mode
// ingress_cache) with its Bloom filters reset every D, in the directory
// ingress_cache-bloomD.
const bloomPrefix = "ingress_cache-bloom"

// caseLabel is the tables' name for a mode or a sweep's case.
func caseLabel(mode string) string {
	if l := labels[mode]; l != "" {
		return l
	}
	if d, ok := strings.CutPrefix(mode, bloomPrefix); ok {
		return labels["ingress_cache"] + ", Bloom reset " + d
	}
	return mode
}

// sweepKey is one cell of a sweep: an incast degree N and a case.
type sweepKey struct{ n, mode string }

// sweep writes DIR/summary.md from the runs of a sweep of sfc-incast.sh
// (DIR/nN/CASE/RUN for each N of -ns and each case of -modes): the peak
// buffer of every case against off's at the same N, a row per N and case
// with what table.md has and the peak and p99 against off, and the Bloom
// reset cases side by side. A case without runs leaves its cells empty.
func sweep(args []string) error {
	fs := flag.NewFlagSet("sweep", flag.ExitOnError)
	dir := fs.String("dir", "", "the script's output directory (DIR/nN/CASE/RUN)")
	nsFlag := fs.String("ns", "16", "the incast degrees N, in table order")
	modes := fs.String("modes", "tcp off egress ingress ingress_cache estimator", "the cases, in table order: modes, or "+bloomPrefix+"D for SFC with a Bloom reset of D")
	rate := fs.Float64("rate", 100e9, "the senders' and the incast port's rate, bit/s of the fabric")
	rtt := fs.Duration("base-rtt", 0, "base RTT for the TCP baseline's slowdown, the fabric's")
	k := fs.Float64("timescale", 1, "the runs' timescale K: this machine ran the fabric K times slower")
	fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("sweep: -dir is required")
	}
	if *k < 1 {
		return fmt.Errorf("sweep: -timescale %g: want at least 1", *k)
	}
	ns, cases := strings.Fields(*nsFlag), strings.Fields(*modes)
	rows := map[sweepKey]*row{}
	for _, n := range ns {
		for _, m := range cases {
			r, err := load(filepath.Join(*dir, "n"+n), m, *rate, rtt.Nanoseconds(), *k)
			if err != nil {
				fmt.Fprintf(os.Stderr, "sfc-report sweep: N=%s %s: %v\n", n, m, err)
				continue
			}
			rows[sweepKey{n, m}] = r
		}
	}
	var w strings.Builder
	fmt.Fprintf(&w, "SFC incast sweep (scripts/experiments/sfc-incast.sh): N-to-1 for N = %s at timescale %g, times the fabric's. "+
		"Buffers at the incast port (sw2 -> r1): peak of the median run (by peak), p99 per arrival; x off: against the same N without SFC (gsperf, mode off).\n\n",
		strings.Join(ns, ", "), *k)

	fmt.Fprint(&w, "Peak buffer (KB), and against off:\n\n| N |")
	for _, m := range cases {
		fmt.Fprintf(&w, " %s |", caseLabel(m))
	}
	fmt.Fprint(&w, "\n|---"+strings.Repeat("|---", len(cases))+"|\n")
	for _, n := range ns {
		off := rows[sweepKey{n, "off"}]
		fmt.Fprintf(&w, "| %s |", n)
		for _, m := range cases {
			r := rows[sweepKey{n, m}]
			switch {
			case r == nil:
				fmt.Fprint(&w, " – |")
			case off == nil || m == "off":
				fmt.Fprintf(&w, " %.0f |", r.peak/1000)
			default:
				fmt.Fprintf(&w, " %.0f (%s) |", r.peak/1000, ratio(r.peak, off.peak))
			}
		}
		fmt.Fprint(&w, "\n")
	}

	fmt.Fprint(&w, "\nEvery N and case:\n\n")
	fmt.Fprint(&w, "| N / case | peak buffer (KB): median [runs] | peak x off | p99 buffer (KB) | p99 x off | drops | incast slowdown avg / p99 (done) | background slowdown avg / p99 (done) | BTS sent (from cache) | BTS suppressed by Bloom | suppression ratio | Bloom flows max | valid runs (fidelity) |\n")
	fmt.Fprint(&w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range ns {
		off := rows[sweepKey{n, "off"}]
		for _, m := range cases {
			r := rows[sweepKey{n, m}]
			if r == nil {
				fmt.Fprintf(&w, "| %s / %s | no runs |%s\n", n, caseLabel(m), strings.Repeat(" |", 11))
				continue
			}
			pr, qr := "–", "–"
			if off != nil && m != "off" {
				pr, qr = ratio(r.peak, off.peak), ratio(r.p99, off.p99)
			}
			fmt.Fprintf(&w, "| %s / %s | %s | %s | %.0f | %s | %.0f | %s | %s | %.0f (%.0f) | %.0f | %s | %.0f | %d of %d |\n",
				n, r.label, peakRuns(r), pr, r.p99/1000, qr, r.drops, incastCell(r), slowdownCell(r.bg),
				r.sent, r.fromCache, r.supp, suppression(r), r.bloomMax, r.valid, r.runs)
		}
	}

	var bloom []string
	for _, m := range cases {
		if strings.HasPrefix(m, bloomPrefix) {
			bloom = append(bloom, m)
		}
	}
	if len(bloom) > 0 {
		fmt.Fprint(&w, "\nBloom reset (SFC: ingress BTS + cache, its filters cleared every reset; the default is rtt/2):\n\n")
		fmt.Fprint(&w, "| N / Bloom reset | peak buffer (KB): median [runs] | peak x off | p99 buffer (KB) | incast slowdown avg / p99 (done) | background slowdown avg / p99 (done) | BTS sent (from cache) | BTS suppressed by Bloom | suppression ratio | Bloom flows max | valid runs (fidelity) |\n")
		fmt.Fprint(&w, "|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, n := range ns {
			off := rows[sweepKey{n, "off"}]
			for _, m := range bloom {
				reset := strings.TrimPrefix(m, bloomPrefix)
				r := rows[sweepKey{n, m}]
				if r == nil {
					fmt.Fprintf(&w, "| %s / %s | no runs |%s\n", n, reset, strings.Repeat(" |", 9))
					continue
				}
				pr := "–"
				if off != nil {
					pr = ratio(r.peak, off.peak)
				}
				fmt.Fprintf(&w, "| %s / %s | %s | %s | %.0f | %s | %s | %.0f (%.0f) | %.0f | %s | %.0f | %d of %d |\n",
					n, reset, peakRuns(r), pr, r.p99/1000, incastCell(r), slowdownCell(r.bg),
					r.sent, r.fromCache, r.supp, suppression(r), r.bloomMax, r.valid, r.runs)
			}
		}
	}
	fmt.Print(w.String())
	return os.WriteFile(filepath.Join(*dir, "summary.md"), []byte(w.String()), 0o644)
}

// ratio is x against of, as "0.42x"; "–" without a reference.
func ratio(x, of float64) string {
	if of <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", x/of)
}

// peakRuns is the median run's peak and every run's, in KB.
func peakRuns(r *row) string {
	var runs []string
	for _, p := range r.peaks {
		runs = append(runs, fmt.Sprintf("%.0f", p/1000))
	}
	return fmt.Sprintf("%.0f [%s]", r.peak/1000, strings.Join(runs, " "))
}

// slowdownCell is the average and p99 slowdown of the completed flows,
// with how many completed of how many; "–" without flows.
func slowdownCell(s stats) string {
	if s.n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f / %.1f (%d/%d)", s.avg, s.p99, s.done, s.n)
}

// incastCell is slowdownCell of the incast; iperf3 (mode tcp) does not
// time the delivery of its transfers.
func incastCell(r *row) string {
	if r.mode == "tcp" {
		return fmt.Sprintf("not measured (%d/%d)", r.incast.done, r.incast.n)
	}
	return slowdownCell(r.incast)
}

// suppression is the share of the BTS the Bloom filters suppressed.
func suppression(r *row) string {
	if r.sent+r.supp == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*r.supp/(r.sent+r.supp))
}
